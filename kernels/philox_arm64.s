//go:build !purego

#include "textflag.h"

// func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32)
//
// Writes groups×4 consecutive Philox4x32-10 blocks (16 words per group) to dst. ctr holds the low
// counter words of the first group's four blocks (lo, lo+1, lo+2, lo+3; the caller guarantees
// they do not wrap within the call), hi the high counter word, (a, b) the stream. The four blocks
// of a group run in the four lanes of each NEON register (c0…c3 one register each), the
// 32×32→64-bit products by UMULL/UMULL2 and their halves by UZP1/UZP2; ST4 interleaves the lanes
// back into block order. Instructions Go's assembler does not spell are WORDs with their
// mnemonic beside them.
TEXT ·philoxNEON(SB), NOSPLIT, $0-44
	MOVD  dst+0(FP), R0
	MOVD  groups+8(FP), R1
	MOVD  key+16(FP), R2
	MOVD  ctr+24(FP), R3
	MOVWU hi+32(FP), R4
	MOVWU a+36(FP), R5
	MOVWU b+40(FP), R6
	MOVWU 0(R2), R7
	MOVWU 4(R2), R8
	VLD1 (R3), [V20.S4]
	WORD $0x4e040c95 // dup v21.4s, w4
	WORD $0x4e040cb6 // dup v22.4s, w5
	WORD $0x4e040cd7 // dup v23.4s, w6
	WORD $0x4e040cf8 // dup v24.4s, w7
	WORD $0x4e040d19 // dup v25.4s, w8
	MOVW $0xd2511f53, R9
	WORD $0x4e040d3a // dup v26.4s, w9
	MOVW $0xcd9e8d57, R9
	WORD $0x4e040d3b // dup v27.4s, w9
	MOVW $0x9e3779b9, R9
	WORD $0x4e040d3c // dup v28.4s, w9
	MOVW $0xbb67ae85, R9
	WORD $0x4e040d3d // dup v29.4s, w9
	MOVW $0x4, R9
	WORD $0x4e040d3e // dup v30.4s, w9

loop:
	WORD $0x4eb41e80 // orr v0.16b, v20.16b, v20.16b
	WORD $0x4eb51ea1 // orr v1.16b, v21.16b, v21.16b
	WORD $0x4eb61ec2 // orr v2.16b, v22.16b, v22.16b
	WORD $0x4eb71ee3 // orr v3.16b, v23.16b, v23.16b
	WORD $0x4eb81f04 // orr v4.16b, v24.16b, v24.16b
	WORD $0x4eb91f25 // orr v5.16b, v25.16b, v25.16b
	WORD $0x2ebac006 // umull v6.2d, v0.2s, v26.2s
	WORD $0x6ebac007 // umull2 v7.2d, v0.4s, v26.4s
	WORD $0x2ebbc048 // umull v8.2d, v2.2s, v27.2s
	WORD $0x6ebbc049 // umull2 v9.2d, v2.4s, v27.4s
	WORD $0x4e8718ca // uzp1 v10.4s, v6.4s, v7.4s
	WORD $0x4e8758cb // uzp2 v11.4s, v6.4s, v7.4s
	WORD $0x4e89190c // uzp1 v12.4s, v8.4s, v9.4s
	WORD $0x4e89590d // uzp2 v13.4s, v8.4s, v9.4s
	WORD $0x6e211dad // eor v13.16b, v13.16b, v1.16b
	WORD $0x6e241dad // eor v13.16b, v13.16b, v4.16b
	WORD $0x6e231d6b // eor v11.16b, v11.16b, v3.16b
	WORD $0x6e251d6b // eor v11.16b, v11.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac1ae // umull v14.2d, v13.2s, v26.2s
	WORD $0x6ebac1af // umull2 v15.2d, v13.4s, v26.4s
	WORD $0x2ebbc170 // umull v16.2d, v11.2s, v27.2s
	WORD $0x6ebbc171 // umull2 v17.2d, v11.4s, v27.4s
	WORD $0x4e8f19d2 // uzp1 v18.4s, v14.4s, v15.4s
	WORD $0x4e8f59d3 // uzp2 v19.4s, v14.4s, v15.4s
	WORD $0x4e911a06 // uzp1 v6.4s, v16.4s, v17.4s
	WORD $0x4e915a07 // uzp2 v7.4s, v16.4s, v17.4s
	WORD $0x6e2c1ce7 // eor v7.16b, v7.16b, v12.16b
	WORD $0x6e241ce7 // eor v7.16b, v7.16b, v4.16b
	WORD $0x6e2a1e73 // eor v19.16b, v19.16b, v10.16b
	WORD $0x6e251e73 // eor v19.16b, v19.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac0e8 // umull v8.2d, v7.2s, v26.2s
	WORD $0x6ebac0e9 // umull2 v9.2d, v7.4s, v26.4s
	WORD $0x2ebbc260 // umull v0.2d, v19.2s, v27.2s
	WORD $0x6ebbc261 // umull2 v1.2d, v19.4s, v27.4s
	WORD $0x4e891902 // uzp1 v2.4s, v8.4s, v9.4s
	WORD $0x4e895903 // uzp2 v3.4s, v8.4s, v9.4s
	WORD $0x4e81180e // uzp1 v14.4s, v0.4s, v1.4s
	WORD $0x4e81580f // uzp2 v15.4s, v0.4s, v1.4s
	WORD $0x6e261def // eor v15.16b, v15.16b, v6.16b
	WORD $0x6e241def // eor v15.16b, v15.16b, v4.16b
	WORD $0x6e321c63 // eor v3.16b, v3.16b, v18.16b
	WORD $0x6e251c63 // eor v3.16b, v3.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac1f0 // umull v16.2d, v15.2s, v26.2s
	WORD $0x6ebac1f1 // umull2 v17.2d, v15.4s, v26.4s
	WORD $0x2ebbc06d // umull v13.2d, v3.2s, v27.2s
	WORD $0x6ebbc06c // umull2 v12.2d, v3.4s, v27.4s
	WORD $0x4e911a0b // uzp1 v11.4s, v16.4s, v17.4s
	WORD $0x4e915a0a // uzp2 v10.4s, v16.4s, v17.4s
	WORD $0x4e8c19a8 // uzp1 v8.4s, v13.4s, v12.4s
	WORD $0x4e8c59a9 // uzp2 v9.4s, v13.4s, v12.4s
	WORD $0x6e2e1d29 // eor v9.16b, v9.16b, v14.16b
	WORD $0x6e241d29 // eor v9.16b, v9.16b, v4.16b
	WORD $0x6e221d4a // eor v10.16b, v10.16b, v2.16b
	WORD $0x6e251d4a // eor v10.16b, v10.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac120 // umull v0.2d, v9.2s, v26.2s
	WORD $0x6ebac121 // umull2 v1.2d, v9.4s, v26.4s
	WORD $0x2ebbc147 // umull v7.2d, v10.2s, v27.2s
	WORD $0x6ebbc146 // umull2 v6.2d, v10.4s, v27.4s
	WORD $0x4e811813 // uzp1 v19.4s, v0.4s, v1.4s
	WORD $0x4e815812 // uzp2 v18.4s, v0.4s, v1.4s
	WORD $0x4e8618f0 // uzp1 v16.4s, v7.4s, v6.4s
	WORD $0x4e8658f1 // uzp2 v17.4s, v7.4s, v6.4s
	WORD $0x6e281e31 // eor v17.16b, v17.16b, v8.16b
	WORD $0x6e241e31 // eor v17.16b, v17.16b, v4.16b
	WORD $0x6e2b1e52 // eor v18.16b, v18.16b, v11.16b
	WORD $0x6e251e52 // eor v18.16b, v18.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac22d // umull v13.2d, v17.2s, v26.2s
	WORD $0x6ebac22c // umull2 v12.2d, v17.4s, v26.4s
	WORD $0x2ebbc24f // umull v15.2d, v18.2s, v27.2s
	WORD $0x6ebbc24e // umull2 v14.2d, v18.4s, v27.4s
	WORD $0x4e8c19a3 // uzp1 v3.4s, v13.4s, v12.4s
	WORD $0x4e8c59a2 // uzp2 v2.4s, v13.4s, v12.4s
	WORD $0x4e8e19e0 // uzp1 v0.4s, v15.4s, v14.4s
	WORD $0x4e8e59e1 // uzp2 v1.4s, v15.4s, v14.4s
	WORD $0x6e301c21 // eor v1.16b, v1.16b, v16.16b
	WORD $0x6e241c21 // eor v1.16b, v1.16b, v4.16b
	WORD $0x6e331c42 // eor v2.16b, v2.16b, v19.16b
	WORD $0x6e251c42 // eor v2.16b, v2.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac027 // umull v7.2d, v1.2s, v26.2s
	WORD $0x6ebac026 // umull2 v6.2d, v1.4s, v26.4s
	WORD $0x2ebbc049 // umull v9.2d, v2.2s, v27.2s
	WORD $0x6ebbc048 // umull2 v8.2d, v2.4s, v27.4s
	WORD $0x4e8618ea // uzp1 v10.4s, v7.4s, v6.4s
	WORD $0x4e8658eb // uzp2 v11.4s, v7.4s, v6.4s
	WORD $0x4e88192d // uzp1 v13.4s, v9.4s, v8.4s
	WORD $0x4e88592c // uzp2 v12.4s, v9.4s, v8.4s
	WORD $0x6e201d8c // eor v12.16b, v12.16b, v0.16b
	WORD $0x6e241d8c // eor v12.16b, v12.16b, v4.16b
	WORD $0x6e231d6b // eor v11.16b, v11.16b, v3.16b
	WORD $0x6e251d6b // eor v11.16b, v11.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac18f // umull v15.2d, v12.2s, v26.2s
	WORD $0x6ebac18e // umull2 v14.2d, v12.4s, v26.4s
	WORD $0x2ebbc171 // umull v17.2d, v11.2s, v27.2s
	WORD $0x6ebbc170 // umull2 v16.2d, v11.4s, v27.4s
	WORD $0x4e8e19f2 // uzp1 v18.4s, v15.4s, v14.4s
	WORD $0x4e8e59f3 // uzp2 v19.4s, v15.4s, v14.4s
	WORD $0x4e901a27 // uzp1 v7.4s, v17.4s, v16.4s
	WORD $0x4e905a26 // uzp2 v6.4s, v17.4s, v16.4s
	WORD $0x6e2d1cc6 // eor v6.16b, v6.16b, v13.16b
	WORD $0x6e241cc6 // eor v6.16b, v6.16b, v4.16b
	WORD $0x6e2a1e73 // eor v19.16b, v19.16b, v10.16b
	WORD $0x6e251e73 // eor v19.16b, v19.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac0c9 // umull v9.2d, v6.2s, v26.2s
	WORD $0x6ebac0c8 // umull2 v8.2d, v6.4s, v26.4s
	WORD $0x2ebbc261 // umull v1.2d, v19.2s, v27.2s
	WORD $0x6ebbc260 // umull2 v0.2d, v19.4s, v27.4s
	WORD $0x4e881922 // uzp1 v2.4s, v9.4s, v8.4s
	WORD $0x4e885923 // uzp2 v3.4s, v9.4s, v8.4s
	WORD $0x4e80182f // uzp1 v15.4s, v1.4s, v0.4s
	WORD $0x4e80582e // uzp2 v14.4s, v1.4s, v0.4s
	WORD $0x6e271dce // eor v14.16b, v14.16b, v7.16b
	WORD $0x6e241dce // eor v14.16b, v14.16b, v4.16b
	WORD $0x6e321c63 // eor v3.16b, v3.16b, v18.16b
	WORD $0x6e251c63 // eor v3.16b, v3.16b, v5.16b
	WORD $0x4ebc8484 // add v4.4s, v4.4s, v28.4s
	WORD $0x4ebd84a5 // add v5.4s, v5.4s, v29.4s
	WORD $0x2ebac1d1 // umull v17.2d, v14.2s, v26.2s
	WORD $0x6ebac1d0 // umull2 v16.2d, v14.4s, v26.4s
	WORD $0x2ebbc06c // umull v12.2d, v3.2s, v27.2s
	WORD $0x6ebbc06d // umull2 v13.2d, v3.4s, v27.4s
	WORD $0x4e901a2b // uzp1 v11.4s, v17.4s, v16.4s
	WORD $0x4e905a2a // uzp2 v10.4s, v17.4s, v16.4s
	WORD $0x4e8d1989 // uzp1 v9.4s, v12.4s, v13.4s
	WORD $0x4e8d5988 // uzp2 v8.4s, v12.4s, v13.4s
	WORD $0x6e2f1d08 // eor v8.16b, v8.16b, v15.16b
	WORD $0x6e241d08 // eor v8.16b, v8.16b, v4.16b
	WORD $0x6e221d4a // eor v10.16b, v10.16b, v2.16b
	WORD $0x6e251d4a // eor v10.16b, v10.16b, v5.16b
	WORD $0x4ea81d0c // orr v12.16b, v8.16b, v8.16b
	WORD $0x4ea91d2d // orr v13.16b, v9.16b, v9.16b
	WORD $0x4eaa1d4e // orr v14.16b, v10.16b, v10.16b
	WORD $0x4eab1d6f // orr v15.16b, v11.16b, v11.16b
	WORD $0x4c9f080c // st4 {v12.4s, v13.4s, v14.4s, v15.4s}, [x0], #64
	WORD $0x4ebe8694 // add v20.4s, v20.4s, v30.4s
	SUBS $1, R1, R1
	BNE  loop
	RET
