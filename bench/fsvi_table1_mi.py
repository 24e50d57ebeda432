"""bench/fsvi_table1_mi.py DIR KIND...: the OOD columns of bench/fsvi_table1.sh's table by mutual
information (the epistemic part of the predictive entropy) instead of the entropy, with the mean MI
on the test and the OOD images, from the eval reports the script cached in DIR/eval (KIND_S.digits.json,
KIND_S.fmnist-shuffled.json for every run S of each KIND; ensembles KIND_gG_mM). Mean ± standard
error over runs. A deterministic network (MAP) has MI 0 everywhere: its AUROC by MI is 50 and its
reports carry no mean MI ("—").

    python3 bench/fsvi_table1_mi.py runs/fsvi_table1 fsvi mfvi map

--paired A-B ... (after the kinds) adds a table of paired differences A − B over the seeds both
kinds have run (the same seed: the same data order and initial means): accuracy and ECE, and the
AUROC against both OOD sets by entropy and by MI, mean ± standard error of the differences (the MI
columns "—" when either kind is deterministic: its reports carry no MI).

    python3 bench/fsvi_table1_mi.py runs/fsvi_table1 fsvi mfvi map --paired fsvi-mfvi fsvi-map
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
    out, kinds, pairs = argv[1], argv[2:], []
    if "--paired" in kinds:
        i = kinds.index("--paired")
        kinds, pairs = kinds[:i], kinds[i + 1 :]
        for p in pairs:
            if p.count("-") != 1 or "" in p.split("-"):
                sys.exit("fsvi_table1_mi.py: --paired %r is not KIND-KIND" % p)
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
    if pairs:
        paired(out, pairs)


def metrics(out, kind):
    """seed → (accuracy %, ECE, AUROC digits, shuffled by entropy, the same by MI — None for a
    deterministic network, whose reports carry no mean MI) of each run of kind (single models
    KIND_S only, not ensembles)."""
    runs = {}
    for d in glob.glob(os.path.join(out, "eval", kind + "_*.digits.json")):
        seed = os.path.basename(d)[len(kind) + 1 : -len(".digits.json")]
        if not seed.isdigit():
            continue
        rd = json.load(open(d))
        rs = json.load(open(d[: -len(".digits.json")] + ".fmnist-shuffled.json"))
        mi = "mean_mi" in rd
        runs[int(seed)] = (100 * rd["classification"]["accuracy"], rd["classification"]["ece"],
                           100 * rd["ood"]["entropy"]["auroc"], 100 * rs["ood"]["entropy"]["auroc"],
                           100 * rd["ood"]["mi"]["auroc"] if mi else None, 100 * rs["ood"]["mi"]["auroc"] if mi else None)
    return runs


def paired(out, pairs):
    print()
    print("| pair | seeds | accuracy | ECE | AUROC digits | AUROC shuffled | AUROC digits (MI) | AUROC shuffled (MI) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in pairs:
        a, b = p.split("-")
        ra, rb = metrics(out, a), metrics(out, b)
        seeds = sorted(set(ra) & set(rb))
        if not seeds:
            print("| %s − %s | 0 | — | — | — | — | — | — |" % (a, b))
            continue
        cells = []
        for j, d in enumerate([2, 3, 2, 2, 2, 2]):
            if any(ra[s][j] is None or rb[s][j] is None for s in seeds):
                cells.append("—")
            else:
                cells.append(signed([ra[s][j] - rb[s][j] for s in seeds], d))
        print("| %s − %s | %d | %s |" % (a, b, len(seeds), " | ".join(cells)))


def signed(v, digits):
    """The mean of v with its sign, " ± " its standard error (unsigned) for more than one value."""
    c = cell(v, "%%.%df" % digits)
    _, _, se = c.partition(" ± ")
    m = ("%%+.%df" % digits) % (sum(v) / len(v))
    return m + (" ± " + se if se else "")


if __name__ == "__main__":
    main(sys.argv)
