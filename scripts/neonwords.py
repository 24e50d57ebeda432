#!/usr/bin/env python3
"""scripts/neonwords.py: (re)encode the WORD lines of Go assembly files from their comments.

Go's assemblers do not spell most NEON instructions, so kernels/*_arm64.s and *_arm.s write them
as `WORD $0x........ // mnemonic operands` (inside a #define, `WORD $0x........; /* mnemonic
operands */ \\`). This script assembles every such comment with llvm-mc (aarch64 for *_arm64.*,
armv7 NEON for *_arm.*) and rewrites the WORD to the encoding, so new code can be written as
`WORD $0 // umov w4, v0.b[0]`. With -check it changes nothing and exits 1 if any WORD differs
from its comment's encoding.

It also checks the encoder macros, a comment with the instruction's template over the macro's
parameters in braces (and after a semicolon the parameters' bounds, 32 by default on arm64 and 16
on arm), then the one-line macro:

    // fmla v{d}.4s, v{n}.4s, v{m}.s[{i}]; m < 16, i < 4
    #define FMLA_ELEM(d, n, m, i) WORD $(0x4f801000 | ((i)&1)<<21 | ...)

by evaluating the expression (in Python, so every & must be inside parentheses, as Go's assembler
binds it like <<) for every combination of parameter values, or a sample of 512 of them, and
comparing it with llvm-mc's encoding of the template.

    scripts/neonwords.py [-check] FILE...
"""
import itertools
import random
import re
import subprocess
import sys

LINE = re.compile(r"^(\s*WORD\s+\$)(0x[0-9a-fA-F]+|0)(\s*//\s*)(.*?)\s*$")
MACRO_LINE = re.compile(r"^(\s*WORD\s+\$)(0x[0-9a-fA-F]+|0)(;?\s*/\*\s*)(.*?)(\s*\*/.*)$")
TEMPLATE = re.compile(r"^//\s*(.*\{\w+\}.*?)\s*(?:;\s*(.*?))?\s*$")
ENCODER = re.compile(r"^#define\s+(\w+)\(([\w\s,]*)\)\s+WORD\s+\$\((.*)\)\s*$")
BOUND = re.compile(r"(\w+)\s*<\s*(\d+)")


def encode(instrs, arm64):
    triple = ["-triple=aarch64"] if arm64 else ["-triple=armv7a", "-mattr=+neon,+vfp4"]
    src = "\n".join(instrs) + "\n"
    res = subprocess.run(["llvm-mc", *triple, "-show-encoding"], input=src, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"llvm-mc failed:\n{res.stderr}")
    words = []
    for line in res.stdout.splitlines():
        m = re.search(r"encoding: \[([^\]]*)\]", line)
        if m:
            b = [int(x, 16) for x in m.group(1).split(",")]
            if len(b) != 4:
                sys.exit(f"not a 4-byte instruction: {line}")
            words.append(b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24)
    if len(words) != len(instrs):
        sys.exit(f"llvm-mc gave {len(words)} encodings for {len(instrs)} instructions:\n{res.stderr}")
    return words


def check_encoders(path, lines, arm64):
    """The number of encoder macros in lines whose expression differs from llvm-mc somewhere."""
    cases = []  # (line index, name, values, instruction, word)
    for i in range(1, len(lines)):
        d, t = ENCODER.match(lines[i]), TEMPLATE.match(lines[i - 1])
        if not d or not t:
            continue
        name, params, expr = d.group(1), [p.strip() for p in d.group(2).split(",")], d.group(3)
        bounds = {p: 32 if arm64 else 16 for p in params}
        for p, n in BOUND.findall(t.group(2) or ""):
            bounds[p] = int(n)
        combos = list(itertools.product(*(range(bounds[p]) for p in params)))
        if len(combos) > 512:
            combos = [c for c in combos if len(set(c)) == 1] + random.Random(name).sample(combos, 512)
        for c in combos:
            env = dict(zip(params, c))
            ins = t.group(1)
            for p, v in env.items():
                ins = ins.replace("{" + p + "}", str(v))
            cases.append((i, name, env, ins, eval(expr, {}, env)))
    if not cases:
        return 0
    words = encode([c[3] for c in cases], arm64)
    bad = set()
    for (i, name, env, ins, got), want in zip(cases, words):
        if got != want and i not in bad:
            bad.add(i)
            print(f"{path}:{i+1}: {name}{tuple(env.values())} is {got:#010x} but {ins} is {want:#010x}")
    return len(bad)


def main():
    args = sys.argv[1:]
    check = bool(args) and args[0] == "-check"
    if check:
        args = args[1:]
    bad = 0
    for path in args:
        arm64 = "_arm64." in path
        lines = open(path).read().split("\n")
        idx = [i for i, l in enumerate(lines) if LINE.match(l) or MACRO_LINE.match(l)]
        instrs = [(LINE.match(lines[i]) or MACRO_LINE.match(lines[i])).group(4) for i in idx]
        words = encode(instrs, arm64) if instrs else []
        for i, w in zip(idx, words):
            m = LINE.match(lines[i]) or MACRO_LINE.match(lines[i])
            if int(m.group(2), 16) != w:
                bad += 1
                if check:
                    print(f"{path}:{i+1}: {m.group(2)} but {m.group(4)} is {w:#010x}")
            rest = m.group(5) if m.re is MACRO_LINE else ""
            lines[i] = f"{m.group(1)}{w:#010x}{m.group(3)}{m.group(4)}{rest}"
        bad += check_encoders(path, lines, arm64)
        if not check:
            open(path, "w").write("\n".join(lines))
    if check and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
