#!/usr/bin/env python3
"""scripts/philox_arm64.py: writes kernels/philox_arm64.s (then run scripts/neonwords.py on it).

The Philox4x32-10 NEON generator: eight blocks per pass in two sets of four lanes, interleaved
round by round, and one set of four for an odd group, for one or several streams (rows) a call. Rounds 0-2 use constants the prologue
computes: only the counter's low word differs
between blocks, so in round 0 the product of c2 = a and the words c1, c3 are the same for every
block, and in round 1 the product of c0; the keys of rounds 3 and 4 stay in registers, those of
rounds 5-9 are loaded (LD2R, both words at once) from the frame, where the prologue writes them.
Registers of each set's state are allocated round by round from a pool of eight. The rounds are
macros (MUL, HALVES, PRODUCTS, ROUND0…ROUND and their …_PAIR twins for the two interleaved sets)
defined at the top of the output from the templates in MACROS; the loops call the rounds with the
allocated registers.

    scripts/philox_arm64.py > kernels/philox_arm64.s && scripts/neonwords.py kernels/philox_arm64.s
"""

M0, M1 = "v26", "v27"
B1, D0, D1, K02, F = "v16", "v17", "v18", "v19", "v20"
CTRA, CTRB, INC = "v21", "v22", "v23"
KA, KB = "v24", "v25"
K4A, K4B, K3A, K3B = "v28", "v29", "v30", "v31"

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


def num(r):
    return int(r[1:])


# The round macros, for one set of four blocks: (name, parameters, body). A body is a list of
# (op, d, n, m) with each operand a parameter name or a fixed register (one of the constants
# above). Round 0: c2' = hi(M0·ctr) ^ B1, c3' = lo(M0·ctr) (c0', c1' are constants). Round 1:
# c0'' = hi(M1·c2) ^ D0, c1'' = lo(M1·c2), c2'' = c3 ^ D1 (c3'' is constant). Rounds 2-9 from the
# state c0…c3 through the products p, q = M0·c0 and r, t = M1·c2 to the new state c0 = h1,
# c1 = n1, c2 = h0, c3 = n3; round 2 has the constants F for c3 ^ k1 and K02 for k0.
def call(name, *args):
    """A call of the macro name in a macro's body (of name_PAIR in the _PAIR twin)."""
    return ("CALL", name, list(args))


MACROS = [
    ("MUL", ["x", "m", "p", "q"], [("UMULL", "p", "x", "m"), ("UMULL2", "q", "x", "m")]),
    ("HALVES", ["p", "q", "lo", "hi"], [("UZP1", "lo", "p", "q"), ("UZP2", "hi", "p", "q")]),
    ("PRODUCTS", ["c0", "c2", "p", "q", "r", "t", "n3", "h0"],
     [call("MUL", "c0", M0, "p", "q"), call("MUL", "c2", M1, "r", "t"), call("HALVES", "p", "q", "n3", "h0")]),
    ("ROUND0", ["ctr", "p", "q", "lo", "hi"],
     [("UMULL", "p", "ctr", M0), ("UMULL2", "q", "ctr", M0), call("HALVES", "p", "q", "lo", "hi"),
      ("EOR", "hi", "hi", B1)]),
    ("ROUND1", ["c2", "c3", "r", "t", "lo", "hi"],
     [call("MUL", "c2", M1, "r", "t"), call("HALVES", "r", "t", "lo", "hi"), ("EOR", "hi", "hi", D0),
      ("EOR", "c3", "c3", D1)]),
    ("ROUND2", ["c0", "c1", "c2", "p", "q", "r", "t", "n3", "h0", "n1", "h1"],
     [call("PRODUCTS", "c0", "c2", "p", "q", "r", "t", "n3", "h0"), ("EOR", "h0", "h0", F),
      call("HALVES", "r", "t", "n1", "h1"), ("EOR", "h1", "h1", "c1"), ("EOR", "h1", "h1", K02)]),
    ("ROUND", ["c0", "c1", "c2", "c3", "p", "q", "r", "t", "n3", "h0", "n1", "h1", "ka", "kb"],
     [call("PRODUCTS", "c0", "c2", "p", "q", "r", "t", "n3", "h0"), ("EOR", "h0", "h0", "c3"),
      ("EOR", "h0", "h0", "kb"), call("HALVES", "r", "t", "n1", "h1"), ("EOR", "h1", "h1", "c1"),
      ("EOR", "h1", "h1", "ka")]),
]
DOCS = {
    "MUL": "vp, vq = the 64-bit products of vm's lanes and vx's, lanes 0-1 and 2-3.",
    "HALVES": "vlo, vhi = the low and the high 32-bit halves of the four products in vp, vq.",
    "PRODUCTS": "Rounds 2-9 begin: p, q = M0·c0 and r, t = M1·c2, the low half of M0·c0 to vn3, the high\n"
                "// to vh0.",
    "ROUND0": "Round 0 of one set from its counters in vctr to c2 = vhi, c3 = vlo (p, q scratch).",
    "ROUND1": "Round 1 from c2, c3 to c0 = vhi, c1 = vlo, c2 = vc3 (r, t scratch).",
    "ROUND2": "Round 2 from c0…c2 (c3 is folded into F) to c0 = vh1, c1 = vn1, c2 = vh0, c3 = vn3\n"
              "// (p, q, r, t scratch).",
    "ROUND": "Rounds 3-9 from c0…c3 to c0 = vh1, c1 = vn1, c2 = vh0, c3 = vn3 with the round keys in\n"
             "// vka, vkb (p, q, r, t scratch).",
}
FIXED = {"ctr", "ka", "kb", "m"}  # the parameters that name the same register for both sets
ENC = {"UMULL": (0x2ea0c000, "umull v{d}.2d, v{n}.2s, v{m}.2s"), "UMULL2": (0x6ea0c000, "umull2 v{d}.2d, v{n}.4s, v{m}.4s"),
       "UZP1": (0x4e801800, "uzp1 v{d}.4s, v{n}.4s, v{m}.4s"), "UZP2": (0x4e805800, "uzp2 v{d}.4s, v{n}.4s, v{m}.4s"),
       "EOR": (0x6e201c00, "eor v{d}.16b, v{n}.16b, v{m}.16b"), "ADD": (0x4ea08400, "add v{d}.4s, v{n}.4s, v{m}.4s")}


def macro_text():
    """The #defines of the encoders and of the round macros, single and pair (ROUND…_PAIR: the
    same round for set a and for set b, the one with eight registers more, interleaved
    instruction by instruction; ROUND0_PAIR takes set b's counter as ctrb)."""
    lines = [f"//   M0 = v{num(M0)}, M1 = v{num(M1)}, B1 = v{num(B1)}, D0 = v{num(D0)}, D1 = v{num(D1)}, "
             f"K02 = v{num(K02)}, F = v{num(F)}, KA, KB = v{num(KA)}, v{num(KB)},",
             f"//   K4A, K4B = v{num(K4A)}, v{num(K4B)}, K3A, K3B = v{num(K3A)}, v{num(K3B)}.",
             "// A round macro's …_PAIR twin runs the round for set b too (its registers eight on, its",
             "// counter in vctrb), each instruction for set b right after set a's.", ""]
    for op, (base, mn) in ENC.items():
        lines.append(f"// {mn}")
        lines.append(f"#define {op}(d, n, m) WORD $({base:#010x} | (m)<<16 | (n)<<5 | (d))")
    lines.append(f"// KA, KB = the next round's keys, from R19 on.")
    lines.append(f"#define LD2R_KEYS \\")
    lines.append(f"\tWORD $0; /* ld2r {{{KA}.4s, {KB}.4s}}, [x19], #8 */")
    lines.append("")

    def arg(x, b):
        if x.startswith("v"):  # a fixed register: the same for both sets
            return str(num(x))
        if b and x == "ctr":
            return "ctrb"
        return f"({x})+8" if b and x not in FIXED else x

    for name, params, body in MACROS:
        lines.append(f"// {DOCS[name]}")
        for pair in (False, True):
            ps = params + (["ctrb"] if pair and "ctr" in params else [])
            ins_ = []
            for item in body:
                if item[0] == "CALL":
                    args = [str(num(x)) if x.startswith("v") else x for x in item[2]]
                    ins_.append(f"{item[1]}{'_PAIR' if pair else ''}({', '.join(args)})")
                    continue
                op, d, n, m = item
                for b in ((False, True) if pair else (False,)):
                    ins_.append(f"{op}({arg(d, b)}, {arg(n, b)}, {arg(m, b)})")
            lines.append(f"#define {name}{'_PAIR' if pair else ''}({', '.join(ps)}) \\")
            lines.append("; \\\n".join("\t" + x for x in ins_))
            lines.append("")
        if name == "ROUND":
            lines.append("// ROUND with KA, KB first loaded from R19 (rounds 5-9).")
            for pair in (False, True):
                sfx = "_PAIR" if pair else ""
                ps = params[:-2]
                lines.append(f"#define ROUNDK{sfx}({', '.join(ps)}) \\")
                lines.append(f"\tLD2R_KEYS; \\")
                lines.append(f"\tROUND{sfx}({', '.join(ps)}, {num(KA)}, {num(KB)})")
                lines.append("")
    return "\n".join(lines)


def mul(s):
    return s.alloc(), s.alloc()


def rounds(sets, ctrs, last_targets):
    """Emits rounds 0-9 for the sets (interleaved), the final state of set i in last_targets[i]."""
    calls = []
    for s, ctr in zip(sets, ctrs):
        p, q = mul(s)
        lo, hi = s.alloc(), s.alloc()
        calls.append(("ROUND0", [ctr, p, q, lo, hi]))
        s.release(p, q)
        s.st = {"c2": hi, "c3": lo}
    emit(calls)
    calls = []
    for s in sets:
        c2, c3 = s.st["c2"], s.st["c3"]
        r, t = mul(s)
        s.release(c2)
        lo, hi = s.alloc(), s.alloc()
        calls.append(("ROUND1", [c2, c3, r, t, lo, hi]))
        s.release(r, t)
        s.st = {"c0": hi, "c1": lo, "c2": c3}
    emit(calls)
    for rnd in range(2, 10):
        name = "ROUND2" if rnd == 2 else "ROUNDK" if rnd > 4 else "ROUND"
        last = rnd == 9
        if last and len(sets) > 1:
            ins(f"ld2r {{{KA}.4s, {KB}.4s}}, [x19], #8")
            name = "ROUND"
        calls = []
        for k, s in enumerate(sets):
            c0, c1, c2 = s.st["c0"], s.st["c1"], s.st["c2"]
            c3 = s.st.get("c3")
            p, q = mul(s)
            r, t = mul(s)
            s.release(c0, c2)
            if last:
                n0, n1, n2, n3 = pick(last_targets[k], p, q, r, t, c1, c3)
                h0, h1 = n2, n0
            else:
                n3, h0 = s.alloc(), s.alloc()  # lo0 → c3, hi0 → c2
                s.release(p, q)
                n1, h1 = s.alloc(), s.alloc()
            s.release(r, t, c1)
            if c3 is not None:
                s.release(c3)
            if last:
                s.release(p, q)
            args = [c0, c1, c2] + ([c3] if c3 is not None else []) + [p, q, r, t, n3, h0, n1, h1]
            if name == "ROUND":
                args += [KA, KB] if rnd > 4 else [K4A, K4B] if rnd == 4 else [K3A, K3B]
            calls.append((name, args))
            s.st = {"c0": h1, "c1": n1, "c2": h0, "c3": n3}
        emit(calls, serial=last)


def pick(cands, p, q, r, t, c1, c3):
    """The first candidate of four consecutive registers (c0…c3) that the last round can write
    without overwriting a value it still reads."""
    for n0, n1, n2, n3 in cands:
        if (n3 not in (p, q, r, t, c1, c3) and n2 not in (r, t, c1, c3, n3)
                and n1 not in (r, t, c1, n2, n3) and n0 not in (c1, n1, n2, n3)):
            return n0, n1, n2, n3
    raise SystemExit("no target registers for the last round")


def emit(calls, serial=False):
    """One macro call per set, or, for two sets whose registers differ by eight (set b's counter
    aside), one …_PAIR call."""
    if len(calls) == 2 and not serial:
        (na, a), (nb, b) = calls
        shift = [x if x in (CTRA, KA, KB, K3A, K3B, K4A, K4B) else f"v{num(x) + 8}" for x in a]
        if na != nb or [x for x, y in zip(b, shift) if x != y and x != CTRB]:
            raise SystemExit(f"set b's {nb}{b} is not set a's {na}{a} shifted by eight")
        args = [str(num(x)) for x in a] + ([str(num(b[0]))] if na == "ROUND0" else [])
        go(f"{na}_PAIR({', '.join(args)})")
        return
    for name, args in calls:
        go(f"{name}({', '.join(str(num(x)) for x in args)})")


def main():
    hdr = '''//go:build !purego

#include "textflag.h"

// Code generated by scripts/philox_arm64.py; DO NOT EDIT.

// The NEON instructions Go's assembler does not spell, as macros of register numbers (the Arm
// A64 encoding of the instruction in the comment, checked by scripts/neonwords.py), and the rounds of Philox4x32-10 built of them
// on the constants of the prologue:
%s

// func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32, rows int)
//
// Writes groups×4 consecutive Philox4x32-10 blocks (16 words per group) to dst, for rows ≥ 1
// streams one after the other: (a, b), (a+1, b), …, (a+rows−1, b) (a wrapping as a uint32), each
// from the same counters. ctr holds the low counter words of the first group's four blocks (lo,
// lo+1, lo+2, lo+3; the caller guarantees they do not wrap within a row), hi the high counter
// word. Only the low counter word c0 differs between a row's blocks, so round 0's product M1·c2
// and its new c0, c1 are the same for every block of the row (c0 = hi(M1·a) ^ hi ^ k0, c1 =
// lo(M1·a)), and so is round 1's product M0·c0: the prologue computes the keys once (those of
// rounds 0-2 kept in R20-R23 for the rows, of rounds 3 and 4 in registers, of rounds 5-9 written
// to the frame, from where each round loads its pair with one LD2R: R19, reset every pass), and
// each row folds its products with the keys of rounds 0-2 into three constants (B1 and K02 do not
// depend on a). Two groups per pass, one set of four blocks in v0-v7 and one in v8-v15 (the four
// blocks of a set in the four lanes of each register, c0…c3 one register each), then one group
// alone if groups is odd. The 32×32→64-bit products by UMULL/UMULL2 and their halves by
// UZP1/UZP2; ST4 interleaves the lanes back into block order. Instructions Go's assembler does not
// spell are the macros above or WORDs with their mnemonic beside them.
TEXT ·philoxNEON(SB), NOSPLIT, $48-56
	MOVD  dst+0(FP), R0
	MOVD  groups+8(FP), R1
	MOVD  key+16(FP), R2
	MOVD  ctr+24(FP), R24
	MOVWU hi+32(FP), R4
	MOVWU a+36(FP), R5
	MOVWU b+40(FP), R6
	MOVD  rows+48(FP), R25'''
    out.append(hdr % macro_text())
    # The keys, once: k0 of round 0 in R20, the keys of round 1 in R21, R22, k1 of round 2 in R23
    # (see the file comment of philoxNEON); B1 = b ^ k1 and K02 do not depend on a.
    for x in ["ldp w7, w8, [x2]",
              "mov w9, #0x1f53", "movk w9, #0xd251, lsl #16", "mov w10, #0x8d57", "movk w10, #0xcd9e, lsl #16",
              f"dup {M0}.4s, w9", f"dup {M1}.4s, w10",
              "mov w14, #0x79b9", "movk w14, #0x9e37, lsl #16", "mov w15, #0xae85", "movk w15, #0xbb67, lsl #16",
              "eor w2, w6, w8", f"dup {B1}.4s, w2", "mov w20, w7",
              "add w21, w7, w14", "add w22, w8, w15",
              "add w7, w21, w14", "add w23, w22, w15",
              f"dup {K02}.4s, w7",
              "add w7, w7, w14", "add w8, w23, w15",
              f"dup {K3A}.4s, w7", f"dup {K3B}.4s, w8",
              "add w7, w7, w14", "add w8, w8, w15",
              f"dup {K4A}.4s, w7", f"dup {K4B}.4s, w8"]:
        ins(x)
    # The keys of rounds 5-9, one pair of words each, in the frame from R19 on.
    go("MOVD $keys-40(SP), R19")
    for r in range(5, 10):
        ins("add w7, w7, w14")
        ins("add w8, w8, w15")
        ins(f"stp w7, w8, [x19, #{8 * (r - 5)}]")
    # Each row: M1·a → (ah, al), c0 = ah ^ hi ^ k0 after round 0, M0·c0 → (eh, el) in round 1,
    # D0 = al ^ k0', D1 = eh ^ k1', F = el ^ k1'' (the keys of rounds 1 and 2).
    out.append("\nrow:")
    for x in ["umull x11, w5, w10", "lsr x12, x11, #32", "eor w12, w12, w4", "eor w12, w12, w20",
              "umull x13, w12, w9",
              "eor w2, w11, w21", f"dup {D0}.4s, w2",
              "lsr x3, x13, #32", "eor w3, w3, w22", f"dup {D1}.4s, w3",
              "eor w2, w13, w23", f"dup {F}.4s, w2",
              f"ld1 {{{CTRA}.4s}}, [x24]", f"movi {INC}.4s, #4", f"add {CTRB}.4s, {CTRA}.4s, {INC}.4s",
              f"movi {INC}.4s, #8"]:
        ins(x)
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
    go("SUB  $40, R19, R19")
    go("SUBS $1, R2, R2")
    go("BNE  pair")
    out.append("\nsingle:")
    go("TBZ  $0, R1, next")
    a = Set([f"v{i}" for i in range(0, 8)])
    rounds([a], [CTRA], [ta])
    c = a.st
    ins(f"st4 {{{c['c0']}.4s, {c['c1']}.4s, {c['c2']}.4s, {c['c3']}.4s}}, [x0], #64")
    go("SUB  $40, R19, R19")
    out.append("\nnext:")
    go("ADDW $1, R5, R5")
    go("SUBS $1, R25, R25")
    go("BNE  row")
    go("RET")
    print("\n".join(out))


main()
