#!/usr/bin/env python3
"""Prints the two-group loop of philoxAVX2 (kernels/philox_amd64.s): sixteen Philox4x32-10 blocks
per iteration as two groups of eight in YMM lanes, their rounds interleaved so that one group's
multiplies overlap the other's (a single group is latency-bound: each round waits for the last).

Group A lives in Y0-Y6 and group B in Y7-Y13 (four counter words and three temporaries each, the
roles rotating from round to round, so no register moves), the round keys in Y14 and Y15; the
multipliers and Weyl increments are memory operands. Run: python3 scripts/philox_amd64_pairs.py
and paste the output between the markers in philox_amd64.s."""

def rnd(c, t):
    """One round on state c = [c0, c1, c2, c3] with temporaries t = [t0, t1, t2]; returns the
    instructions and the new (c, t)."""
    c0, c1, c2, c3 = c
    t0, t1, t2 = t
    ins = [
        f"VPSRLQ   $32, {c0}, {t0}",
        f"VPMULUDQ philoxM0<>(SB), {c0}, {t1}",
        f"VPMULUDQ philoxM0<>(SB), {t0}, {t0}",
        f"VPSLLQ   $32, {t0}, {c0}",
        f"VPBLENDD $0xAA, {c0}, {t1}, {c0}",  # lo(c0·M0)
        f"VPSRLQ   $32, {t1}, {t1}",
        f"VPBLENDD $0xAA, {t0}, {t1}, {t1}",  # hi(c0·M0)
        f"VPSRLQ   $32, {c2}, {t0}",
        f"VPMULUDQ philoxM1<>(SB), {c2}, {t2}",
        f"VPMULUDQ philoxM1<>(SB), {t0}, {t0}",
        f"VPSLLQ   $32, {t0}, {c2}",
        f"VPBLENDD $0xAA, {c2}, {t2}, {c2}",  # lo(c2·M1)
        f"VPSRLQ   $32, {t2}, {t2}",
        f"VPBLENDD $0xAA, {t0}, {t2}, {t2}",  # hi(c2·M1)
        f"VPXOR    {c1}, {t2}, {t2}",
        f"VPXOR    Y14, {t2}, {t2}",          # c0' = hi(c2·M1) ^ c1 ^ k0
        f"VPXOR    {c3}, {t1}, {t1}",
        f"VPXOR    Y15, {t1}, {t1}",          # c2' = hi(c0·M0) ^ c3 ^ k1
    ]
    return ins, [t2, c2, t1, c0], [t0, c1, c3]


def store(c, t, off):
    """Lanes back to block order (as the one-group loop does) and 128 bytes stored at off(DI)."""
    c0, c1, c2, c3 = c
    t0, t1, t2 = t
    return [
        f"VPUNPCKLDQ  {c1}, {c0}, {t0}",
        f"VPUNPCKHDQ  {c1}, {c0}, {c0}",
        f"VPUNPCKLDQ  {c3}, {c2}, {t1}",
        f"VPUNPCKHDQ  {c3}, {c2}, {c2}",
        f"VPUNPCKLQDQ {t1}, {t0}, {c1}",
        f"VPUNPCKHQDQ {t1}, {t0}, {c3}",
        f"VPUNPCKLQDQ {c2}, {c0}, {t2}",
        f"VPUNPCKHQDQ {c2}, {c0}, {t1}",
        f"VPERM2I128  $0x20, {c3}, {c1}, {t0}",
        f"VPERM2I128  $0x20, {t1}, {t2}, {c0}",
        f"VPERM2I128  $0x31, {c3}, {c1}, {c2}",
        f"VPERM2I128  $0x31, {t1}, {t2}, {c3}",
        f"VMOVDQU     {t0}, {off}(DI)",
        f"VMOVDQU     {c0}, {off+32}(DI)",
        f"VMOVDQU     {c2}, {off+64}(DI)",
        f"VMOVDQU     {c3}, {off+96}(DI)",
    ]


def main():
    a, ta = ["Y0", "Y1", "Y2", "Y3"], ["Y4", "Y5", "Y6"]
    b, tb = ["Y7", "Y8", "Y9", "Y10"], ["Y11", "Y12", "Y13"]
    out = [
        "pairs:",
        "\tVMOVDQU      (DX), Y0",
        "\tVPADDD       philoxEight<>(SB), Y0, Y7",
        "\tVMOVD        R8, X1",
        "\tVPBROADCASTD X1, Y1",
        "\tVMOVD        R9, X2",
        "\tVPBROADCASTD X2, Y2",
        "\tVMOVD        R10, X3",
        "\tVPBROADCASTD X3, Y3",
        "\tVMOVDQA      Y1, Y8",
        "\tVMOVDQA      Y2, Y9",
        "\tVMOVDQA      Y3, Y10",
        "\tVPBROADCASTD 0(SI), Y14",
        "\tVPBROADCASTD 4(SI), Y15",
    ]
    for r in range(10):
        out.append(f"\t// round {r}, groups A and B")
        ia, a, ta = rnd(a, ta)
        ib, b, tb = rnd(b, tb)
        for x, y in zip(ia, ib):
            out += ["\t" + x, "\t" + y]
        if r < 9:
            out += ["\tVPADDD       philoxW0<>(SB), Y14, Y14", "\tVPADDD       philoxW1<>(SB), Y15, Y15"]
    out.append("\t// Lanes back to block order; A's eight blocks, then B's.")
    out += ["\t" + x for x in store(a, ta, 0)]
    out += ["\t" + x for x in store(b, tb, 128)]
    out += [
        "\tVMOVDQU      (DX), Y0",
        "\tVPADDD       philoxEight<>(SB), Y0, Y0",
        "\tVPADDD       philoxEight<>(SB), Y0, Y0",
        "\tVMOVDQU      Y0, (DX)",
        "\tADDQ         $256, DI",
        "\tSUBQ         $2, CX",
        "\tCMPQ         CX, $2",
        "\tJGE          pairs",
    ]
    print("\n".join(out))


main()
