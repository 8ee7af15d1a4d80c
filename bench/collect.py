#!/usr/bin/env python3
"""bench/collect.py - runs the benchmark programs one after another, merges their ROW lines into
bench/results/<device-slug>.json and prints the table, the ratios and the target checks.

    make bench        gpuos (GPU) + CUDA baselines + PyTorch baselines, on the GPU machine
    make bench-host   the gpuos column only, on the host executor (any machine)

Programs and the lines they print (stdout; stderr passes through):
    build/bench/gpuos_bench       ROW <row> <unit> <value>           the gpuos column
    build/bench/baselines         ROW <row>/<key> <unit> <value>     launches, cuda_graph, launch_sync, copy
    bench/torch_baselines.py      ROW <row>/<key> <unit> <value>     torch_eager, torch_graph
    all three                     INFO <key> <value...>, FAIL <row> <why>, SKIP <what> <why>

To add a row: measure it in gpuos_bench.c (and, where they have it, in baselines.cu and
torch_baselines.py) under the same name, and add a line to ROWS below (unit, what, target).
A row missing from ROWS still appears in the table and the JSON, without a target.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Columns in table order; gpuos first. Baseline keys are fixed by the issue.
COLUMNS = ["gpuos", "launches", "cuda_graph", "launch_sync", "copy", "torch_eager", "torch_graph"]

LOWER_IS_BETTER = {"us", "us/op", "ms", "s", "ns", "ns/op"}
HIGHER_IS_BETTER = {"ops/s", "GB/s", "TFLOP/s"}


class Target:
    """A target for the gpuos value: absolute (op, value) or relative to a baseline column."""

    def __init__(self, op, value, of=None):
        self.op, self.value, self.of = op, value, of

    def check(self, row):
        g = row.get("gpuos")
        if g is None:
            return None, "no gpuos value"
        if self.of:
            b = row.get(self.of)
            if not b:
                return None, f"no {self.of} value"
            v = g / b
            shown = f"gpuos/{self.of} = {v:.2f}"
        else:
            v = g
            shown = f"gpuos = {fmt(v, row['unit'])} {row['unit']}"
        ok = v <= self.value if self.op == "<=" else v >= self.value
        return ok, shown

    def text(self, unit):
        if self.of:
            return f"{self.op} {self.value:g} x {self.of}"
        return f"{self.op} {fmt(self.value, unit)} {unit}"


# The rows, in table order. what: one line for the reader; target: the target (H100).
ROWS = {
    "roundtrip": dict(unit="us", what="one add on 4096 floats: submit until its fence is done on the host",
                      target=Target("<=", 4.0)),
    "roundtrip_download": dict(unit="us", what="the same add, until a 4-byte download sees it"),
    "independent": dict(unit="ops/s", what="independent adds on 4096-float tensors, incl. host submission",
                        target=Target(">=", 20e6)),
    "independent_many": dict(unit="ops/s", what="the same adds submitted in batches of 256 (gpuos_submit_many)"),
    "independent_graph": dict(unit="ops/s", what="the same adds as one recorded graph of 1000, launched back to back"),
    "chain": dict(unit="us/op", what="1000 dependent in-place adds on 4096 floats",
                  target=Target("<=", 0.3)),
    "large_elementwise": dict(unit="GB/s", what="one add on 64M floats (read a, b, write out)",
                              target=Target(">=", 0.85, of="copy")),
    "cold_start": dict(unit="s", what="context creation until the first result, empty disk cache",
                       target=Target("<=", 10.0)),
    "warm_start": dict(unit="ms", what="context creation until the first result, filled disk cache",
                       target=Target("<=", 100.0)),
    "define_cold_ms": dict(unit="ms", what="gpuos_op_define of a new body until its first result (nothing cached)",
                           target=Target("<=", 1.0, of="nvrtc_plus_50")),
    "define_warm_ms": dict(unit="ms", what="the same with the op's object and module in the disk cache",
                           target=Target("<=", 5.0)),
    "swap_pause_us": dict(unit="us", what="longest gap in a stream of waited tiny tasks during a module swap",
                          target=Target("<=", 500.0)),
    "swap_lost_tasks": dict(unit="tasks", what="tasks lost, repeated or reordered over 100 swaps under load",
                            target=Target("<=", 0.0)),
    "branchy_dag": dict(unit="us", what="8 chains of 50 adds on 4096 floats joined: one graph launch until done",
                        target=Target("<=", 0.5, of="cuda_graph_seq")),
    "tiny_mlp": dict(unit="us", what="8 layers of matmul 8x256x256, bias, gelu, residual, layernorm: one forward",
                     target=Target("<=", 25.0)),
    "pipeline_jobs": dict(unit="jobs/s", what="jobs of copy-in, 20 adds on 4096 floats, copy-out; 8 in flight",
                          target=Target(">=", 1.5, of="cuda_graph_per_job")),
    "priority_latency": dict(unit="us", what="5 high-priority adds on 4096 floats behind 3000 normal adds on 1M floats",
                             target=Target("<=", 2.0, of="alone")),
}


def fmt(v, unit=""):
    if v is None:
        return "-"
    if unit in ("ops/s",) or abs(v) >= 1e6:
        for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(v) >= div:
                return f"{v / div:.3g}{suf}"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a >= 0.01:
        return f"{v:.3f}"
    return f"{v:.2g}"


def slug(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-") or "unknown"


def lower_is_better(unit):
    if unit in LOWER_IS_BETTER:
        return True
    if unit in HIGHER_IS_BETTER:
        return False
    return not unit.endswith("/s")


def run_program(label, cmd, timeout, log):
    """Runs cmd, returns (stdout lines, return code or 'timeout'); stdout lines are also echoed
    (ROW/FAIL/SKIP) to stderr as they come, so a long run shows progress."""
    print(f"collect: {label}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    log.write(f"### {label}: {' '.join(cmd)}\n")
    try:
        # own process group: a timeout also ends gpuos_bench's start-row children
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True, cwd=ROOT, bufsize=1,
                             start_new_session=True)
    except OSError as e:
        log.write(f"### could not start: {e}\n")
        return [f"FAIL {label} could not start: {e}"], 127
    lines = []

    def reader():
        for line in p.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            log.write(line + "\n")
            if line.startswith(("ROW ", "FAIL ", "SKIP ")):
                print(f"  [{label}] {line}", file=sys.stderr, flush=True)

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    t0 = time.monotonic()
    try:
        rc = p.wait(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            p.kill()
        p.wait()
        if isinstance(e, KeyboardInterrupt):
            raise
        rc = "timeout"
        lines.append(f"FAIL {label} killed after {timeout} s (the rows it printed are kept)")
    th.join(5)
    log.write(f"### {label}: exit {rc} after {time.monotonic() - t0:.1f} s\n")
    return lines, rc


def parse(lines, default_key, results, info, failures, skips, prog):
    for line in lines:
        parts = line.split(None, 3)
        if not parts:
            continue
        tag = parts[0]
        if tag == "ROW" and len(parts) >= 4:
            name, unit, value = parts[1], parts[2], parts[3].split()[0]
            row, _, key = name.partition("/")
            key = key or default_key
            try:
                v = float(value)
            except ValueError:
                failures.append(f"{prog}: bad ROW line: {line}")
                continue
            r = results.setdefault(row, {"unit": unit})
            if r["unit"] != unit:
                failures.append(f"{prog}: {row}/{key} in {unit}, but the row is in {r['unit']}: dropped")
                continue
            r[key] = v
        elif tag == "INFO" and len(parts) >= 2:
            key = parts[1]
            rest = line.split(None, 2)[2] if len(line.split(None, 2)) > 2 else ""
            try:
                val = float(rest) if rest and re.fullmatch(r"[-+0-9.eE]+", rest) else rest
                if isinstance(val, float) and val.is_integer() and "." not in rest and "e" not in rest.lower():
                    val = int(val)
            except ValueError:
                val = rest
            info.setdefault(prog, {})[key] = val
        elif tag == "FAIL":
            failures.append(f"{prog}: {line[5:]}")
        elif tag == "SKIP":
            skips.append(f"{prog}: {line[5:]}")


def device_name(args, info):
    if args.host:
        cpu = platform.processor() or ""
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return f"host {cpu or platform.machine()} x{os.cpu_count()}".strip(), "host-" + slug(cpu or platform.machine())
    name = None
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", str(args.device)],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            name = out.splitlines()[0].strip() if out else None
        except (OSError, subprocess.SubprocessError):
            name = None
    name = name or info.get("baselines", {}).get("device") or info.get("torch", {}).get("torch.device")
    name = name or "unknown-gpu"
    return name, slug(name)


def git(*a):
    try:
        return subprocess.run(["git", *a], capture_output=True, text=True, cwd=ROOT, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def print_table(doc, out=sys.stdout):
    res = doc["results"]
    order = [r for r in ROWS if r in res] + [r for r in res if r not in ROWS]
    cols = [c for c in COLUMNS if any(c in res[r] for r in order)]
    cols += sorted({k for r in order for k in res[r] if k not in COLUMNS and k != "unit"})
    w = max([len(r) for r in order] + [10])

    def line(cells, widths):
        return "  ".join(c.ljust(wd) if i == 0 else c.rjust(wd) for i, (c, wd) in enumerate(zip(cells, widths)))

    p = lambda s="": print(s, file=out)  # noqa: E731
    p(f"gpuos benchmark: {doc['device']}   backend {doc.get('backend', '?')}   commit {doc['commit']}   {doc['date']}")
    p()
    head = ["row", "unit"] + cols
    widths = [w, 6] + [max(11, len(c)) for c in cols]
    p(line(head, widths))
    p(line(["-" * x for x in widths], widths))
    for r in order:
        u = res[r]["unit"]
        p(line([r, u] + [fmt(res[r].get(c), u) for c in cols], widths))
    base = [c for c in cols if c != "gpuos"]
    if base and any("gpuos" in res[r] for r in order):
        p()
        p("gpuos vs each baseline: how many times better gpuos is (> 1: gpuos wins; time rows baseline/gpuos,")
        p("rate rows gpuos/baseline)")
        widths2 = [w] + [max(11, len(c)) for c in base]
        p(line(["row"] + base, widths2))
        p(line(["-" * x for x in widths2], widths2))
        for r in order:
            if not doc["ratios"].get(r):
                continue
            cells = [r]
            for c in base:
                ratio = doc["ratios"].get(r, {}).get(c)
                cells.append("-" if ratio is None else f"{ratio:.3g}x")
            p(line(cells, widths2))
    p()
    p("targets (the issue's, for an H100):" + ("   [host executor: the targets are for the GPU]"
                                                  if doc.get("backend") != "cuda" else ""))
    for r in order:
        t = doc["targets"].get(r)
        if t:
            p(f"  {r.ljust(w)}  {t['target']:<22} {t['measured']:<34} {t['status']}")
    notes = doc.get("notes", [])
    if notes:
        p()
        for n in notes:
            p(f"note: {n}")


def build_doc(args, results, info, failures, skips):
    name, sl = device_name(args, info)
    backend = info.get("gpuos", {}).get("backend")
    if backend is None:
        for k in ("cold_start.backend", "warm_start.backend"):
            backend = backend or info.get("gpuos", {}).get(k)
    notes = []
    if not args.host and backend and backend != "cuda":
        notes.append(f"WARNING: gpuos ran on the {backend} executor, not the GPU (no CUDA backend yet, or "
                     f"it failed to start): its column is not a GPU result; file named *-{backend}-executor.json")
        sl += f"-{backend}-executor"
    # GPUOS_BENCH_COMMIT names the commit when it is set: a copy of the tree (the lent GPU
    # machine) may carry no .git, or a stale one that would name the wrong commit
    env_commit = os.environ.get("GPUOS_BENCH_COMMIT")
    commit = env_commit or git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = not env_commit and bool(git("status", "--porcelain", "--untracked-files=no"))
    ratios, targets = {}, {}
    for r, row in results.items():
        unit = row["unit"]
        g = row.get("gpuos")
        if g:
            for c, v in row.items():
                if c in ("unit", "gpuos") or not v:
                    continue
                ratios.setdefault(r, {})[c] = (v / g) if lower_is_better(unit) else (g / v)
        spec = ROWS.get(r)
        if spec and spec.get("target"):
            t = spec["target"]
            ok, shown = t.check(row)
            targets[r] = {"target": t.text(unit), "measured": shown,
                          "status": "n/a" if ok is None else ("met" if ok else "missed")}
    gi = info.get("gpuos", {})
    if "independent.threads" in gi:
        tried = sorted(int(k.split(".")[1][1:]) for k in gi if re.fullmatch(r"independent\.t\d+\.ops_per_s", k))
        note = (f"independent: gpuos submitted from {gi['independent.threads']} host thread(s), the best of "
                f"{','.join(map(str, tried))}")
        if len(results.get("independent", {})) > 2:
            note += "; launches from 1 thread; cuda_graph and torch_graph replay graphs of 1000 independent adds"
        notes.append(note)
    if "warm_start.inprocess_second_create_ms" in gi:
        notes.append(f"warm_start runs a fresh process (driver init included); a second gpuos_create in the "
                     f"same process took {fmt(gi['warm_start.inprocess_second_create_ms'])} ms")
    if "cold_start.cache_bytes" in gi:
        notes.append(f"cold_start left {gi['cold_start.cache_bytes']} bytes in its fresh cache_dir")
    for f in failures:
        notes.append(f"FAILED {f}")
    for s in skips:
        notes.append(f"skipped {s}")
    doc = {
        "device": name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit + ("-dirty" if dirty else ""),
        "backend": backend or "unknown",
        "results": {r: results[r] for r in [x for x in ROWS if x in results] + [x for x in results if x not in ROWS]},
        "ratios": ratios,
        "targets": targets,
        "info": info,
        "notes": notes,
    }
    return doc, sl


def main():
    ap = argparse.ArgumentParser(description="run the gpuos benchmarks and write bench/results/<device>.json")
    ap.add_argument("--host", action="store_true", help="gpuos column only, on the host executor (no GPU needed)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="where gpuos_bench, baselines are")
    ap.add_argument("--device", type=int, default=None, help="CUDA ordinal (default: gpuos AUTO, baselines 0)")
    ap.add_argument("--rows", default="", help="comma list of rows (default: all)")
    ap.add_argument("--threads", default="", help="submitter thread counts for independent (default 1,2,4,8)")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (pipeline check, not for results)")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="the Python that has torch")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="where <device>.json goes")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds for gpuos_bench (the baselines get half, each): the whole run fits a 10-minute lease")
    ap.add_argument("--replay", nargs="*", default=None, metavar="LOG",
                    help="do not run anything: re-read logs written by an earlier run (### label lines)")
    args = ap.parse_args()

    common = []
    if args.quick:
        common.append("--quick")
    if args.rows:
        common += ["--rows", args.rows]
    os.makedirs(args.build, exist_ok=True)
    results, info, failures, skips = {}, {}, [], []
    progs = []  # (label, default key, lines)
    if args.replay is not None:
        for path in args.replay:
            label, lines = None, []
            with open(path) as f:
                for line in f:
                    line = line.rstrip("\n")
                    m = re.match(r"### (\w+): (?!exit)", line)
                    if m:
                        if label:
                            progs.append((label, lines))
                        label, lines = m.group(1), []
                    elif not line.startswith("### "):
                        lines.append(line)
            if label:
                progs.append((label, lines))
    else:
        log_path = os.path.join(args.build, "last-run.log")
        with open(log_path, "w") as log:
            cmd = [os.path.join(args.build, "gpuos_bench")] + common
            if args.host:
                cmd.append("--host")
            elif args.device is not None:
                cmd += ["--device", str(args.device)]
            if args.threads:
                cmd += ["--threads", args.threads]
            lines, rc = run_program("gpuos", cmd, args.timeout, log)
            if rc not in (0, 1):
                lines.append(f"FAIL gpuos_bench exited with {rc}")
            progs.append(("gpuos", lines))
            if not args.host and not args.no_baselines:
                exe = os.path.join(args.build, "baselines")
                cmd = [exe] + common + (["--device", str(args.device)] if args.device is not None else [])
                if os.path.exists(exe):
                    lines, rc = run_program("baselines", cmd, args.timeout / 2, log)
                else:
                    lines = [f"SKIP baselines {exe} not built (make bench builds it with nvcc)"]
                progs.append(("baselines", lines))
            if not args.host and not args.no_torch:
                cmd = [args.python, os.path.join(HERE, "torch_baselines.py")] + common
                cmd += ["--device", str(args.device)] if args.device is not None else []
                lines, rc = run_program("torch", cmd, args.timeout / 2, log)
                progs.append(("torch", lines))
        print(f"collect: raw output in {os.path.relpath(log_path, ROOT)}", file=sys.stderr)
    for label, lines in progs:
        parse(lines, "gpuos" if label == "gpuos" else label, results, info, failures, skips, label)

    if "gpuos" not in {k for r in results.values() for k in r}:
        print("collect: gpuos_bench measured nothing", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        if args.replay is None:
            return 1
    doc, sl = build_doc(args, results, info, failures, skips)
    print()
    print_table(doc)
    if args.replay is None:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, sl + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"\nwrote {os.path.relpath(path, ROOT)}")
    gpuos_failed = any(f.startswith("gpuos:") for f in failures)
    return 1 if gpuos_failed else 0


if __name__ == "__main__":
    sys.exit(main())
