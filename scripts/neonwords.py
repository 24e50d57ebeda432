#!/usr/bin/env python3
"""scripts/neonwords.py: (re)encode the WORD lines of Go assembly files from their comments.

Go's assemblers do not spell most NEON instructions, so kernels/*_arm64.s and *_arm.s write them
as `WORD $0x........ // mnemonic operands`. This script assembles every such comment with llvm-mc
(aarch64 for *_arm64.s, armv7 NEON for *_arm.s) and rewrites the WORD to the encoding, so new
code can be written as `WORD $0 // umov w4, v0.b[0]`. With -check it changes nothing and exits 1
if any WORD differs from its comment's encoding.

    scripts/neonwords.py [-check] FILE.s...
"""
import re
import subprocess
import sys

LINE = re.compile(r"^(\s*WORD\s+\$)(0x[0-9a-fA-F]+|0)(\s*//\s*)(.*?)\s*$")


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


def main():
    args = sys.argv[1:]
    check = bool(args) and args[0] == "-check"
    if check:
        args = args[1:]
    bad = 0
    for path in args:
        lines = open(path).read().split("\n")
        idx = [i for i, l in enumerate(lines) if LINE.match(l)]
        instrs = [LINE.match(lines[i]).group(4) for i in idx]
        words = encode(instrs, path.endswith("_arm64.s")) if instrs else []
        for i, w in zip(idx, words):
            m = LINE.match(lines[i])
            if int(m.group(2), 16) != w:
                bad += 1
                if check:
                    print(f"{path}:{i+1}: {m.group(2)} but {m.group(4)} is {w:#010x}")
            lines[i] = f"{m.group(1)}{w:#010x}{m.group(3)}{m.group(4)}"
        if not check:
            open(path, "w").write("\n".join(lines))
    if check and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
