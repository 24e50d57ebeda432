#!/usr/bin/env python3
"""scripts/philox_arm64.py: writes kernels/philox_arm64.s (then run scripts/neonwords.py on it).

The Philox4x32-10 NEON generator: eight blocks per pass in two sets of four lanes, interleaved
round by round, and one set of four for an odd group. Rounds 0-2 use constants the prologue
computes: only the counter's low word differs
between blocks, so in round 0 the product of c2 = a and the words c1, c3 are the same for every
block, and in round 1 the product of c0; rounds 4-9 add the Weyl constants to round 3's key.
Registers of each set's state are allocated round by round from a pool of eight.

    scripts/philox_arm64.py > kernels/philox_arm64.s && scripts/neonwords.py kernels/philox_arm64.s
"""

M0, M1 = "v26", "v27"
B1, D0, D1, K02, F = "v16", "v17", "v18", "v19", "v20"
CTRA, CTRB, INC = "v21", "v22", "v23"
KA, KB = "v24", "v25"
W0, W1, K3A, K3B = "v28", "v29", "v30", "v31"

out = []


def ins(s):
    out.append(f"\tWORD $0 // {s}")


def go(s):
    out.append(f"\t{s}")


class Set:
    def __init__(self, regs):
        self.free = list(regs)
        self.st = {}

    def alloc(self):
        return self.free.pop(0)

    def release(self, *rs):
        self.free.extend(rs)


def mul(s, src, m):
    p, q = s.alloc(), s.alloc()
    return [f"umull {p}.2d, {src}.2s, {m}.2s", f"umull2 {q}.2d, {src}.4s, {m}.4s"], p, q


def rounds(sets, ctrs, last_targets):
    """Emits rounds 0-9 for the sets (interleaved), the final state of set i in last_targets[i]."""
    # Round 0: c2' = hi(M0·ctr) ^ B1, c3' = lo(M0·ctr); c0', c1' are constants.
    steps = []
    for s, ctr in zip(sets, ctrs):
        i0, p, q = mul(s, ctr, M0)
        lo, hi = s.alloc(), s.alloc()
        steps.append(i0 + [f"uzp1 {lo}.4s, {p}.4s, {q}.4s", f"uzp2 {hi}.4s, {p}.4s, {q}.4s", f"eor {hi}.16b, {hi}.16b, {B1}.16b"])
        s.release(p, q)
        s.st = {"c2": hi, "c3": lo}
    emit(steps)
    # Round 1: c0'' = hi(M1·c2) ^ D0, c1'' = lo(M1·c2), c2'' = c3 ^ D1; c3'' = E (constant).
    steps = []
    for s in sets:
        c2, c3 = s.st["c2"], s.st["c3"]
        i1, r, t = mul(s, c2, M1)
        s.release(c2)
        lo, hi = s.alloc(), s.alloc()
        steps.append(i1 + [f"uzp1 {lo}.4s, {r}.4s, {t}.4s", f"uzp2 {hi}.4s, {r}.4s, {t}.4s",
                           f"eor {hi}.16b, {hi}.16b, {D0}.16b", f"eor {c3}.16b, {c3}.16b, {D1}.16b"])
        s.release(r, t)
        s.st = {"c0": hi, "c1": lo, "c2": c3}
    emit(steps)
    for rnd in range(2, 10):
        ka, kb = KA, KB
        if rnd == 3:
            ka, kb = K3A, K3B
        elif rnd == 4:
            ins(f"add {KA}.4s, {K3A}.4s, {W0}.4s")
            ins(f"add {KB}.4s, {K3B}.4s, {W1}.4s")
        elif rnd > 4:
            ins(f"add {KA}.4s, {KA}.4s, {W0}.4s")
            ins(f"add {KB}.4s, {KB}.4s, {W1}.4s")
        last = rnd == 9
        steps = []
        for k, s in enumerate(sets):
            c0, c1, c2 = s.st["c0"], s.st["c1"], s.st["c2"]
            c3 = s.st.get("c3")
            i0, p, q = mul(s, c0, M0)
            i1, r, t = mul(s, c2, M1)
            s.release(c0, c2)
            if last:
                n0, n1, n2, n3 = pick(last_targets[k], p, q, r, t, c1, c3)
            else:
                n3, h0 = s.alloc(), s.alloc()  # lo0 → c3, hi0 → c2
            seq = i0 + i1
            if last:
                h0 = n2
            seq += [f"uzp1 {n3}.4s, {p}.4s, {q}.4s", f"uzp2 {h0}.4s, {p}.4s, {q}.4s"]
            if c3 is None:
                seq.append(f"eor {h0}.16b, {h0}.16b, {F}.16b")
            else:
                seq += [f"eor {h0}.16b, {h0}.16b, {c3}.16b", f"eor {h0}.16b, {h0}.16b, {kb}.16b"]
            if not last:
                s.release(p, q)
                n1, h1 = s.alloc(), s.alloc()
            else:
                h1 = n0
            seq += [f"uzp1 {n1}.4s, {r}.4s, {t}.4s", f"uzp2 {h1}.4s, {r}.4s, {t}.4s",
                    f"eor {h1}.16b, {h1}.16b, {c1}.16b", f"eor {h1}.16b, {h1}.16b, {K02 if rnd == 2 else ka}.16b"]
            s.release(r, t, c1)
            if c3 is not None:
                s.release(c3)
            if last:
                s.release(p, q)
            steps.append(seq)
            s.st = {"c0": h1, "c1": n1, "c2": h0, "c3": n3}
        emit(steps, serial=last)


def pick(cands, p, q, r, t, c1, c3):
    """The first candidate of four consecutive registers (c0…c3) that the last round can write
    without overwriting a value it still reads."""
    for n0, n1, n2, n3 in cands:
        if (n3 not in (p, q, r, t, c1, c3) and n2 not in (r, t, c1, c3, n3)
                and n1 not in (r, t, c1, n2, n3) and n0 not in (c1, n1, n2, n3)):
            return n0, n1, n2, n3
    raise SystemExit("no target registers for the last round")


def emit(steps, serial=False):
    if serial:
        for st in steps:
            for x in st:
                ins(x)
        return
    n = max(len(s) for s in steps)
    for i in range(n):
        for st in steps:
            if i < len(st):
                ins(st[i])


def main():
    hdr = '''//go:build !purego

#include "textflag.h"

// Code generated by scripts/philox_arm64.py; DO NOT EDIT.

// func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32)
//
// Writes groups×4 consecutive Philox4x32-10 blocks (16 words per group) to dst. ctr holds the low
// counter words of the first group's four blocks (lo, lo+1, lo+2, lo+3; the caller guarantees
// they do not wrap within the call), hi the high counter word, (a, b) the stream. Only the low
// counter word c0 differs between the blocks, so round 0's product M1·c2 and its new c0, c1 are
// the same for every block (c0 = hi(M1·a) ^ hi ^ k0, c1 = lo(M1·a)), and so is round 1's product
// M0·c0: the prologue folds them with the keys of rounds 0-2 into five constants, and rounds 4-9
// add the Weyl constants to round 3's key. Two groups per pass, one set of four blocks in
// v0-v7 and one in v8-v15 (the four blocks of a set in the four lanes of each register, c0…c3
// one register each), then one group alone if groups is odd. The 32×32→64-bit products by
// UMULL/UMULL2 and their halves by UZP1/UZP2; ST4 interleaves the lanes back into block order.
// Instructions Go's assembler does not spell are WORDs with their mnemonic beside them.
TEXT ·philoxNEON(SB), NOSPLIT, $0-44
	MOVD  dst+0(FP), R0
	MOVD  groups+8(FP), R1
	MOVD  key+16(FP), R2
	MOVD  ctr+24(FP), R3
	MOVWU hi+32(FP), R4
	MOVWU a+36(FP), R5
	MOVWU b+40(FP), R6'''
    out.append(hdr)
    # The constants of rounds 0-3 (see the file comment of philoxNEON): M1·a → (ah, al),
    # c0 = ah ^ hi ^ k0 after round 0, M0·c0 → (eh, el) in round 1.
    for x in ["ldp w7, w8, [x2]", f"ld1 {{{CTRA}.4s}}, [x3]",
              "mov w9, #0x1f53", "movk w9, #0xd251, lsl #16", "mov w10, #0x8d57", "movk w10, #0xcd9e, lsl #16",
              f"dup {M0}.4s, w9", f"dup {M1}.4s, w10",
              "mov w14, #0x79b9", "movk w14, #0x9e37, lsl #16", "mov w15, #0xae85", "movk w15, #0xbb67, lsl #16",
              f"dup {W0}.4s, w14", f"dup {W1}.4s, w15",
              "umull x11, w5, w10", "lsr x12, x11, #32", "eor w12, w12, w4", "eor w12, w12, w7",
              "umull x13, w12, w9",
              "eor w2, w6, w8", f"dup {B1}.4s, w2",
              "add w7, w7, w14", "add w8, w8, w15",
              "eor w2, w11, w7", f"dup {D0}.4s, w2",
              "lsr x3, x13, #32", "eor w3, w3, w8", f"dup {D1}.4s, w3",
              "add w7, w7, w14", "add w8, w8, w15",
              f"dup {K02}.4s, w7", "eor w2, w13, w8", f"dup {F}.4s, w2",
              "add w7, w7, w14", "add w8, w8, w15",
              f"dup {K3A}.4s, w7", f"dup {K3B}.4s, w8"]:
        ins(x)
    ins(f"movi {INC}.4s, #4")
    ins(f"add {CTRB}.4s, {CTRA}.4s, {INC}.4s")
    ins(f"movi {INC}.4s, #8")
    go("LSR  $1, R1, R2")
    go("CBZ  R2, single")
    out.append("\npair:")
    a, b = Set([f"v{i}" for i in range(0, 8)]), Set([f"v{i}" for i in range(8, 16)])
    ta = [[f"v{i+j}" for j in range(4)] for i in range(0, 5)]
    tb = [[f"v{i+j}" for j in range(4)] for i in range(8, 13)]
    rounds([a, b], [CTRA, CTRB], [ta, tb])
    for s in (a, b):
        c = s.st
        ins(f"st4 {{{c['c0']}.4s, {c['c1']}.4s, {c['c2']}.4s, {c['c3']}.4s}}, [x0], #64")
    ins(f"add {CTRA}.4s, {CTRA}.4s, {INC}.4s")
    ins(f"add {CTRB}.4s, {CTRB}.4s, {INC}.4s")
    go("SUBS $1, R2, R2")
    go("BNE  pair")
    out.append("\nsingle:")
    go("TBZ  $0, R1, done")
    a = Set([f"v{i}" for i in range(0, 8)])
    rounds([a], [CTRA], [ta])
    c = a.st
    ins(f"st4 {{{c['c0']}.4s, {c['c1']}.4s, {c['c2']}.4s, {c['c3']}.4s}}, [x0], #64")
    out.append("\ndone:")
    go("RET")
    print("\n".join(out))


main()
