"""The split compile's partition (device_ops.cu "parts", gen/gen.py DEVICE PARTS): every device
group is defined by exactly one of n programs for every n, and the programs' measured NVRTC
times (gen/part_costs.json) are balanced as longest-first placement promises: no program
longer than the persistent kernel's, or the average, by more than the longest group."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = (ROOT / "src" / "generated" / "gpuos_device.cu").read_text()
COSTS = json.loads((ROOT / "gen" / "part_costs.json").read_text())


def table():
    m = re.search(r"Groups: (\d+) element-wise, (\d+) reductions, (\d+) matmul, (\d+) row-wise", SRC)
    n_groups = sum(int(x) for x in m.groups())
    rows = re.findall(r"^#define GPUOS__D_PG(\d+) GPUOS__D_SEL\(([^)]*)\) /\* (\S.*?) \*/$", SRC, re.M)
    return n_groups, [(int(g), [int(p) for p in parts.split(",")], key) for g, parts, key in rows]


def test_every_group_has_one_part_per_program_count():
    n_groups, rows = table()
    assert [g for g, _, _ in rows] == list(range(n_groups))
    max_parts = int(re.search(r"#if GPUOS__D_NPARTS > (\d+)", SRC).group(1))
    for g, parts, key in rows:
        assert len(parts) == max_parts - 1, (g, key)
        for n, p in zip(range(2, max_parts + 1), parts):
            assert 0 <= p < n, (g, key, n, p)
    # every group's #if uses the table (no group outside it)
    used = sorted(int(x) for x in re.findall(r"^#if GPUOS__D_MINE\((\d+)\)", SRC, re.M))
    assert set(used) == set(range(n_groups))


def test_parts_are_balanced():
    _, rows = table()
    cost = {key: COSTS["groups"].get(key) for _, _, key in rows}
    missing = [k for k, v in cost.items() if v is None]
    assert not missing, "groups without a measured cost (run gen/measure_parts.py): %s" % missing
    longest = max(cost.values())
    total = COSTS["kernel_ms"] + sum(cost.values())
    for i, n in enumerate(range(2, len(rows[0][1]) + 2)):
        load = [COSTS["kernel_ms"]] + [0] * (n - 1)
        for _, parts, key in rows:
            load[parts[i]] += cost[key]
        assert sum(load) == total
        bound = max(COSTS["kernel_ms"], total / n) + longest
        assert max(load) <= bound, (n, load, bound)
