"""What the bench scripts' Python table rows share: reading edgebnn's concatenated --json
reports and the mean ± standard error cell. A script makes it importable with
PYTHONPATH=bench/lib (from the repository root) or PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")/lib"."""

import json
import math


def json_stream(text):
    """The JSON values of text in order: the reports of several `edgebnn … --json` runs, one
    after another."""
    values, dec, i = [], json.JSONDecoder(), 0
    while text[i:].strip():
        i += len(text[i:]) - len(text[i:].lstrip())
        v, i = dec.raw_decode(text, i)
        values.append(v)
    return values


def cell(v, fmt, signed=False):
    """fmt % the mean of v, then " ± " and fmt % its standard error when v has more than one
    value; signed (for differences) writes the mean with its sign, the standard error without."""
    m = sum(v) / len(v)
    s = (fmt.replace("%", "%+", 1) if signed else fmt) % m
    if len(v) == 1:
        return s
    return s + " ± " + fmt % math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))


def report_pairs(text):
    """The (inspect, eval) pairs of text: the --json reports of `edgebnn inspect` and `edgebnn
    eval` of several models, each model's two one after the other (bench/globalu.sh,
    bench/cnntabs.sh)."""
    objs = json_stream(text)
    if len(objs) % 2:
        raise ValueError("%d reports: not inspect/eval pairs" % len(objs))
    return [(objs[k], objs[k + 1]) for k in range(0, len(objs), 2)]


def same_or_cell(v, fmt):
    """v's one value (as an integer string) when every value is the same, else cell(v, fmt): for
    parameter counts and file bytes, equal across seeds or nearly so."""
    if len(set(v)) == 1:
        return str(v[0])
    return cell(v, fmt)
