"""bench/fsvi_table1_mi.py DIR KIND...: the OOD columns of bench/fsvi_table1.sh's table by mutual
information (the epistemic part of the predictive entropy) instead of the entropy, with the mean MI
on the test and the OOD images, from the eval reports the script cached in DIR/eval (KIND_S.digits.json,
KIND_S.fmnist-shuffled.json for every run S of each KIND; ensembles KIND_gG_mM). Mean ± standard
error over runs. A deterministic network (MAP) has MI 0 everywhere: its AUROC by MI is 50 and its
reports carry no mean MI ("—").

    python3 bench/fsvi_table1_mi.py runs/fsvi_table1 fsvi mfvi map
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from stats import cell  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, kinds = argv[1], argv[2:]
    print("| method | runs | AUROC digits (MI) | AUROC shuffled (MI) | mean MI test | mean MI digits | mean MI shuffled |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        digits = sorted(glob.glob(os.path.join(out, "eval", kind + "_*.digits.json")))
        if not digits:
            print("| %s | 0 | — | — | — | — | — |" % kind)
            continue
        aud, aus, mis = [], [], {"mean_mi": [], "ood_mean_mi": [], "shuffled": []}
        for d in digits:
            s = d[: -len(".digits.json")] + ".fmnist-shuffled.json"
            rd, rs = json.load(open(d)), json.load(open(s))
            aud.append(100 * rd["ood"]["mi"]["auroc"])
            aus.append(100 * rs["ood"]["mi"]["auroc"])
            for key, r, k in (("mean_mi", rd, "mean_mi"), ("ood_mean_mi", rd, "ood_mean_mi"), ("shuffled", rs, "ood_mean_mi")):
                if k in r:
                    mis[key].append(r[k])
        mcells = [cell(v, "%.2e") if len(v) == len(digits) else "—" for v in mis.values()]
        print("| %s | %d | %s | %s | %s |" % (kind, len(digits), cell(aud, "%.2f"), cell(aus, "%.2f"), " | ".join(mcells)))


if __name__ == "__main__":
    main(sys.argv)
