// splat_amd64.h: read-only tables of the AVX2 kernels (exp_amd64.s, philox_amd64.s,
// zig_amd64.s): one 32-bit value in all eight lanes of a YMM register, and the masks of a tail.
// Include after textflag.h.

// DATA8(name, off, v): the 32-bit value v eight times at name<>+off (32 bytes).
#define DATA8(name, off, v) \
	DATA name<>+off+0(SB)/4, v; \
	DATA name<>+off+4(SB)/4, v; \
	DATA name<>+off+8(SB)/4, v; \
	DATA name<>+off+12(SB)/4, v; \
	DATA name<>+off+16(SB)/4, v; \
	DATA name<>+off+20(SB)/4, v; \
	DATA name<>+off+24(SB)/4, v; \
	DATA name<>+off+28(SB)/4, v

// SPLAT8(name, v): the 32-byte read-only symbol name<> holding the 32-bit value v eight times.
#define SPLAT8(name, v) \
	DATA8(name, 0, v); \
	GLOBL name<>(SB), RODATA|NOPTR, $32

// TAILMASK8(name): the 64-byte read-only symbol name<> holding eight all-ones words, then eight
// zero words: the 32 bytes at name<>+4·(8 − r) are the mask of the first r lanes (0 ≤ r ≤ 8).
#define TAILMASK8(name) \
	DATA8(name, 0, $0xffffffff); \
	DATA8(name, 32, $0); \
	GLOBL name<>(SB), RODATA|NOPTR, $64
