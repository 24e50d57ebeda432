// neon_arm64.h: the NEON instructions Go's arm64 assembler does not spell, as macros of register
// numbers, and the register blocks the float32 kernels share (gemm_arm64.s, gemmrows_arm64.s,
// gemv_arm64.s). Each encoder is the Arm A64 encoding of the instruction in its comment with the
// register numbers (0-31) filled in, which scripts/neonwords.py checks against llvm-mc; the kernels
// were byte-identical to their WORD-per-line versions when these macros replaced them.

// FMLA by element, vector and FADD (the comment above each macro is its instruction).
// fmla v{d}.4s, v{n}.4s, v{m}.s[{i}]; m < 16, i < 4
#define FMLA_ELEM(d, n, m, i) WORD $(0x4f801000 | ((i)&1)<<21 | ((i)>>1)<<11 | (m)<<16 | (n)<<5 | (d))
// fmla v{d}.4s, v{n}.4s, v{m}.4s
#define FMLA_VEC(d, n, m) WORD $(0x4e20cc00 | (m)<<16 | (n)<<5 | (d))
// fmul v{d}.4s, v{n}.4s, v{m}.s[{i}]; m < 16, i < 4
#define FMUL_ELEM(d, n, m, i) WORD $(0x4f809000 | ((i)&1)<<21 | ((i)>>1)<<11 | (m)<<16 | (n)<<5 | (d))
// fadd v{d}.4s, v{n}.4s, v{m}.4s
#define FADD_VEC(d, n, m) WORD $(0x4e20d400 | (m)<<16 | (n)<<5 | (d))

// The two FMLA by element of one tile row: vacc += vb0·vm.s[i], v(acc+1) += vb1·vm.s[i].
#define FMLA_ROW(acc, b0, b1, m, i) \
	FMLA_ELEM(acc, b0, m, i); \
	FMLA_ELEM((acc)+1, b1, m, i)

// FMLA_ROW's first depth step: vacc = vb0·vm.s[i], v(acc+1) = vb1·vm.s[i], written over the
// accumulators instead of added to zeroed ones — the same values, except that a product that is
// an exact zero of negative sign stays −0 where +0 + (−0) is +0.
#define FMUL_ROW(acc, b0, b1, m, i) \
	FMUL_ELEM(acc, b0, m, i); \
	FMUL_ELEM((acc)+1, b1, m, i)

// One depth step of the 8×8 tile with the values of A in v0…v7 (row r in vr, lane i) and the
// step's row of B in vb0 (columns 0-3) and vb1 (4-7): op(16+2r, b0, b1, r, i) for each row r, op
// FMLA_ROW (row r accumulates into v(16+2r), v(17+2r)) or, for a tile's first step, FMUL_ROW.
#define TILE_ROWS(op, b0, b1, i) \
	op(16, b0, b1, 0, i); \
	op(18, b0, b1, 1, i); \
	op(20, b0, b1, 2, i); \
	op(22, b0, b1, 3, i); \
	op(24, b0, b1, 4, i); \
	op(26, b0, b1, 5, i); \
	op(28, b0, b1, 6, i); \
	op(30, b0, b1, 7, i)

#define FMLA_TILE_ROWS(b0, b1, i) TILE_ROWS(FMLA_ROW, b0, b1, i)

// FMLA_TILE_ROWS as a tile's first depth step (FMUL_ROW: no zeroed accumulators needed).
#define FMUL_TILE_ROWS(b0, b1, i) TILE_ROWS(FMUL_ROW, b0, b1, i)

// The pointers to the eight rows of a panel of A read in place: R5 = R14, R6…R12 each R1 bytes
// on (gemmPanelRowsNEON, gemmNarrowNEON).
#define A_ROWS \
	MOVD R14, R5; \
	ADD  R1, R5, R6; \
	ADD  R1, R6, R7; \
	ADD  R1, R7, R8; \
	ADD  R1, R8, R9; \
	ADD  R1, R9, R10; \
	ADD  R1, R10, R11; \
	ADD  R1, R11, R12

// Four depth steps' values of each of the eight rows of A (row r into Vr, from A_ROWS's
// pointers, which move on).
#define A_QUAD_LOADS \
	WORD $0x4cdf78a0 /* ld1 {v0.4s}, [x5], #16 */; \
	WORD $0x4cdf78c1 /* ld1 {v1.4s}, [x6], #16 */; \
	WORD $0x4cdf78e2 /* ld1 {v2.4s}, [x7], #16 */; \
	WORD $0x4cdf7903 /* ld1 {v3.4s}, [x8], #16 */; \
	WORD $0x4cdf7924 /* ld1 {v4.4s}, [x9], #16 */; \
	WORD $0x4cdf7945 /* ld1 {v5.4s}, [x10], #16 */; \
	WORD $0x4cdf7966 /* ld1 {v6.4s}, [x11], #16 */; \
	WORD $0x4cdf7987 /* ld1 {v7.4s}, [x12], #16 */

// One depth step's value of each of the eight rows of A (lane 0 of Vr).
#define A_STEP_LOADS \
	WORD $0x0ddf80a0 /* ld1 {v0.s}[0], [x5], #4 */; \
	WORD $0x0ddf80c1 /* ld1 {v1.s}[0], [x6], #4 */; \
	WORD $0x0ddf80e2 /* ld1 {v2.s}[0], [x7], #4 */; \
	WORD $0x0ddf8103 /* ld1 {v3.s}[0], [x8], #4 */; \
	WORD $0x0ddf8124 /* ld1 {v4.s}[0], [x9], #4 */; \
	WORD $0x0ddf8145 /* ld1 {v5.s}[0], [x10], #4 */; \
	WORD $0x0ddf8166 /* ld1 {v6.s}[0], [x11], #4 */; \
	WORD $0x0ddf8187 /* ld1 {v7.s}[0], [x12], #4 */

// Zeroes the sixteen accumulators V16–V31.
#define ZERO_V16_V31 \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; \
	VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; \
	VEOR V23.B16, V23.B16, V23.B16; \
	VEOR V24.B16, V24.B16, V24.B16; \
	VEOR V25.B16, V25.B16, V25.B16; \
	VEOR V26.B16, V26.B16, V26.B16; \
	VEOR V27.B16, V27.B16, V27.B16; \
	VEOR V28.B16, V28.B16, V28.B16; \
	VEOR V29.B16, V29.B16, V29.B16; \
	VEOR V30.B16, V30.B16, V30.B16; \
	VEOR V31.B16, V31.B16, V31.B16

// C row at R3 += alpha (V6 lane 0) × the tile row in vlo (columns 0-3), v(lo+1) (4-7); V4, V5
// are scratch.
#define STORE_ROW(lo) \
	VLD1 (R3), [V4.S4, V5.S4]; \
	FMLA_ROW(4, lo, (lo)+1, 6, 0); \
	VST1 [V4.S4, V5.S4], (R3)

// STORE_ROW(lo), then R3 to C's next row (R4 bytes on).
#define STORE_ROW_NEXT(lo) \
	STORE_ROW(lo); \
	ADD R4, R3, R3

// C[0:8, 0:8] += alpha × the tile in V16–V31 (row r in V(16+2r), V(17+2r)) with C at R3, its
// row stride in bytes in R4 and alpha in V6 lane 0; advances R3 to the last row.
#define STORE_TILE \
	STORE_ROW_NEXT(16); \
	STORE_ROW_NEXT(18); \
	STORE_ROW_NEXT(20); \
	STORE_ROW_NEXT(22); \
	STORE_ROW_NEXT(24); \
	STORE_ROW_NEXT(26); \
	STORE_ROW_NEXT(28); \
	STORE_ROW(30)

// C row at R3 = alpha (V6 lane 0) × the tile row in vlo, v(lo+1), without reading C; V4, V5 are
// scratch.
#define STORE_ROW_OVER(lo) \
	FMUL_ELEM(4, lo, 6, 0); \
	FMUL_ELEM(5, (lo)+1, 6, 0); \
	VST1 [V4.S4, V5.S4], (R3)

// STORE_ROW_OVER(lo), then R3 to C's next row (R4 bytes on).
#define STORE_ROW_OVER_NEXT(lo) \
	STORE_ROW_OVER(lo); \
	ADD R4, R3, R3

// STORE_TILE writing C[0:8, 0:8] = alpha × the tile instead of adding to it (C is not read).
#define STORE_TILE_OVER \
	STORE_ROW_OVER_NEXT(16); \
	STORE_ROW_OVER_NEXT(18); \
	STORE_ROW_OVER_NEXT(20); \
	STORE_ROW_OVER_NEXT(22); \
	STORE_ROW_OVER_NEXT(24); \
	STORE_ROW_OVER_NEXT(26); \
	STORE_ROW_OVER_NEXT(28); \
	STORE_ROW_OVER(30)

// The running moments of four scaled values (accMomentsNEON, softmaxMomentsNEON): the four float32
// at x times v7.s[0], stored back (x += 16), widened to float64 in v1, v2; s (two pairs at s,
// s += 32) += them and s2 (at s2, s2 += 32) += their squares (exact in float64, so one FMLA).
// v0–v6 are scratch.
#define MOMENTS4(x, s, s2) \
	VLD1   (x), [V0.S4]; \
	WORD   $0x4f879000; /* fmul v0.4s, v0.4s, v7.s[0] */ \
	VST1.P [V0.S4], 16(x); \
	WORD   $0x0e617801; /* fcvtl v1.2d, v0.2s */ \
	WORD   $0x4e617802; /* fcvtl2 v2.2d, v0.4s */ \
	VLD1   (s), [V3.D2, V4.D2]; \
	WORD   $0x4e61d463; /* fadd v3.2d, v3.2d, v1.2d */ \
	WORD   $0x4e62d484; /* fadd v4.2d, v4.2d, v2.2d */ \
	VST1.P [V3.D2, V4.D2], 32(s); \
	VLD1   (s2), [V5.D2, V6.D2]; \
	WORD   $0x4e61cc25; /* fmla v5.2d, v1.2d, v1.2d */ \
	WORD   $0x4e62cc46; /* fmla v6.2d, v2.2d, v2.2d */ \
	VST1.P [V5.D2, V6.D2], 32(s2)

// MOMENTS4 for one value: x += 4, s += 8, s2 += 8; s7 holds the scale, s0, d1, d3, d5 are scratch.
#define MOMENTS1(x, s, s2) \
	FMOVS   (x), F0; \
	WORD    $0x1e270800; /* fmul s0, s0, s7 */ \
	FMOVS.P F0, 4(x); \
	WORD    $0x1e22c001; /* fcvt d1, s0 */ \
	FMOVD   (s), F3; \
	WORD    $0x1e612863; /* fadd d3, d3, d1 */ \
	FMOVD.P F3, 8(s); \
	FMOVD   (s2), F5; \
	WORD    $0x1f411425; /* fmadd d5, d1, d1, d5 */ \
	FMOVD.P F5, 8(s2)
