"""opspec - what the tests test: the operator table of docs/OPERATORS.md, and the (op, dtype, rank)
combinations that this build emitted (tests/generated/manifest.json, written by `make gen`).

The spec is parsed from the document itself, not from gen/, so that the tests check the generator
against the contract and not against itself.
"""
import json
import os
import re

from gpuos_ctypes import DTYPES, FLOATS, INTS, OPS, ROOT

SPEC = os.path.join(ROOT, "docs", "OPERATORS.md")
MANIFEST = os.path.join(ROOT, "tests", "generated", "manifest.json")

DTYPE_SETS = {
    "ALL": set(DTYPES),
    "NUM": set(DTYPES) - {"bool"},
    "INT": set(INTS),
    "INTB": set(INTS) | {"bool"},
    "FLT": set(FLOATS),
}


class OpSpec:
    def __init__(self, id, name, dtypes, out, section):
        self.id, self.name, self.dtypes, self.out, self.section = id, name, dtypes, out, section

    def __repr__(self):
        return "OpSpec(%d, %s, %s, %s)" % (self.id, self.name, sorted(self.dtypes), self.out)


def parse_spec(path=SPEC):
    """{name: OpSpec} from the operator tables of docs/OPERATORS.md."""
    ops = {}
    section, cols = "", None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("### "):
            section, cols = line[4:].strip(), None
            continue
        if not line.startswith("|"):
            cols = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cols is None:
            cols = [c.lower() for c in cells]
            continue
        if not cells or not re.fullmatch(r"\d+", cells[0]) or "dtypes" not in cols:
            continue
        name = cells[cols.index("op")]
        dset = cells[cols.index("dtypes")].split()[0]
        ops[name] = OpSpec(int(cells[0]), name, set(DTYPE_SETS[dset]), cells[cols.index("out")], section)
    return ops


SPEC_OPS = parse_spec()


def load_manifest(path=MANIFEST):
    """The manifest as a dict, or None if `make gen` has not written it."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _entries(manifest):
    """(op, dtype, rank) triples of the manifest. Accepts a list of entries, or a dict holding one
    under "combos"/"entries"/"emitted"/"kernels"; entries are [op, dtype, rank] or dicts."""
    items = manifest
    if isinstance(manifest, dict):
        for key in ("combos", "combinations", "entries", "emitted", "kernels", "cases"):
            if key in manifest:
                items = manifest[key]
                break
        else:
            raise ValueError("manifest.json: no list of (op, dtype, rank) entries found (keys: %s)"
                             % sorted(manifest))
    out = []
    for e in items:
        if isinstance(e, dict):
            op, dt = e["op"], e["dtype"]
            ranks = e["ranks"] if "ranks" in e else [e["rank"]]
        else:
            op, dt, r = e
            ranks = r if isinstance(r, list) else [r]
        for r in ranks:
            out.append((op, dt, int(r)))
    return out


def combos():
    """Every (op, dtype, rank) to test, sorted by op id, dtype id, rank. From the manifest when there
    is one, else from the spec (every op x dtype of its set x ranks 0..8)."""
    m = load_manifest()
    if m is None:
        triples = [(op, dt, r) for op, s in SPEC_OPS.items() for dt in s.dtypes for r in range(9)]
    else:
        triples = _entries(m)
    triples = sorted(set(triples), key=lambda t: (OPS.index(t[0]), DTYPES.index(t[1]), t[2]))
    return triples


def manifest_dtypes_ranks():
    """(dtypes, ranks) the build was generated for, from the manifest (None if unknown)."""
    m = load_manifest()
    if m is None:
        return None
    ts = _entries(m)
    return sorted({t[1] for t in ts}, key=DTYPES.index), sorted({t[2] for t in ts})
