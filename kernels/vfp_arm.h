// VFPv2 encoder macros for the 32-bit ARM kernels without NEON (gemm_vfp_arm.s, dot4_vfp_arm.s):
// Go's 32-bit ARM assembler names only the even single registers (F0–F15), so these encode the
// Arm A32 instructions over any S register numbers; scripts/neonwords.py checks them against
// llvm-mc.

// vmla.f32 s{d}, s{n}, s{m}; d < 32, n < 32, m < 32
#define VMLA_S(d, n, m) WORD $(0xee000a00 | ((d)&1)<<22 | ((d)>>1)<<12 | ((n)&1)<<7 | ((n)>>1)<<16 | ((m)&1)<<5 | ((m)>>1))

// vadd.f32 s{d}, s{n}, s{m}; d < 32, n < 32, m < 32
#define VADD_S(d, n, m) WORD $(0xee300a00 | ((d)&1)<<22 | ((d)>>1)<<12 | ((n)&1)<<7 | ((n)>>1)<<16 | ((m)&1)<<5 | ((m)>>1))
