// VFPv2 encoder macros for the 32-bit ARM kernels without NEON (gemm_vfp_arm.s, dot4_vfp_arm.s):
// Go's 32-bit ARM assembler names only the even single registers (F0–F15), so these encode the
// Arm A32 instructions over any S register numbers; scripts/neonwords.py checks them against
// llvm-mc.

// vmla.f32 s{d}, s{n}, s{m}; d < 32, n < 32, m < 32
#define VMLA_S(d, n, m) WORD $(0xee000a00 | ((d)&1)<<22 | ((d)>>1)<<12 | ((n)&1)<<7 | ((n)>>1)<<16 | ((m)&1)<<5 | ((m)>>1))

// vadd.f32 s{d}, s{n}, s{m}; d < 32, n < 32, m < 32
#define VADD_S(d, n, m) WORD $(0xee300a00 | ((d)&1)<<22 | ((d)>>1)<<12 | ((n)&1)<<7 | ((n)>>1)<<16 | ((m)&1)<<5 | ((m)>>1))

// Eight VMLA_S over consecutive registers, s(d+i) += s(n+i)·s(m+i) for i = 0…7 (VMLA8), with
// the same s(n) in every product (VMLA8_N: s(d+i) += s(n)·s(m+i)), or the same s(m) (VMLA8_M:
// s(d+i) += s(n+i)·s(m)), in the order of i.
#define VMLA8(d, n, m) \
	VMLA_S(d, n, m); \
	VMLA_S((d)+1, (n)+1, (m)+1); \
	VMLA_S((d)+2, (n)+2, (m)+2); \
	VMLA_S((d)+3, (n)+3, (m)+3); \
	VMLA_S((d)+4, (n)+4, (m)+4); \
	VMLA_S((d)+5, (n)+5, (m)+5); \
	VMLA_S((d)+6, (n)+6, (m)+6); \
	VMLA_S((d)+7, (n)+7, (m)+7)

#define VMLA8_N(d, n, m) \
	VMLA_S(d, n, m); \
	VMLA_S((d)+1, n, (m)+1); \
	VMLA_S((d)+2, n, (m)+2); \
	VMLA_S((d)+3, n, (m)+3); \
	VMLA_S((d)+4, n, (m)+4); \
	VMLA_S((d)+5, n, (m)+5); \
	VMLA_S((d)+6, n, (m)+6); \
	VMLA_S((d)+7, n, (m)+7)

#define VMLA8_M(d, n, m) \
	VMLA_S(d, n, m); \
	VMLA_S((d)+1, (n)+1, m); \
	VMLA_S((d)+2, (n)+2, m); \
	VMLA_S((d)+3, (n)+3, m); \
	VMLA_S((d)+4, (n)+4, m); \
	VMLA_S((d)+5, (n)+5, m); \
	VMLA_S((d)+6, (n)+6, m); \
	VMLA_S((d)+7, (n)+7, m)
