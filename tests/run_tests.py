"""run_tests.py - runs the parts of the gpuos test suite and totals them (make test, test-c, test-py).

    python3 tests/run_tests.py [--make make] [--build build] c py [-- pytest args]

Each part prints "PART: N passed, N failed" (pytest also ", N skipped": a skip is never counted as
passed); the last line is the total "N passed, N failed". Exit status 1 if anything failed.
A part that does not build counts as one failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_PARTS = ["test_header_c", "test_header_cpp", "test_threads", "test_order_stress", "test_expr", "test_rtops", "test_graph", "test_priority", "test_runs", "test_repeat", "test_fuse", "test_cudalog", "test_gate", "test_contexts", "test_slices"]
COUNTS = re.compile(r"(\d+) passed, (\d+) failed")


def build(make, target):
    """make the target (a path as the Makefile names it: relative to the repository root)."""
    target = os.path.relpath(target, ROOT)
    r = subprocess.run(make.split() + ["--no-print-directory", "-s", target], cwd=ROOT)
    return r.returncode == 0


def run_c(make, bdir, name):
    exe = os.path.join(bdir, "tests", name)
    if not build(make, exe):
        print("%s: build failed" % name, flush=True)
        return 0, 1, 0
    # the test's output passes through as it comes (a slow or stuck test shows where it is)
    r = subprocess.Popen([exe], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = None
    for line in r.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = COUNTS.search(line) or m
    r.wait()
    if m is None:
        print("%s: exited %d without a count line" % (name, r.returncode), flush=True)
        return 0, 1, 0
    p, f = int(m.group(1)), int(m.group(2))
    if r.returncode != 0 and f == 0:
        print("%s: exited %d" % (name, r.returncode))
        f = 1
    return p, f, 0


def run_py(make, bdir, args):
    lib = os.path.join(bdir, "libgpuos.so")
    if not build(make, lib):
        print("pytest: %s does not build" % lib, flush=True)
        return 0, 1, 0
    res = os.path.join(bdir, "tests", "pytest-results.json")
    os.makedirs(os.path.dirname(res), exist_ok=True)
    if os.path.exists(res):
        os.remove(res)
    env = dict(os.environ, GPUOS_TEST_RESULTS=res, GPUOS_LIB=os.path.abspath(lib))
    cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-rfEs"] + args
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    if not os.path.exists(res):
        print("pytest: exited %d without results" % r.returncode, flush=True)
        return 0, 1, 0
    with open(res) as f:
        d = json.load(f)
    p, fl, s = d["passed"], d["failed"], d["skipped"]
    if r.returncode not in (0, 5) and fl == 0:      # e.g. an internal error, interrupted run
        fl = 1
    if r.returncode == 5 or p + fl == 0:            # no test ran: that is a failure, not a pass
        print("pytest: no test ran", flush=True)
        fl = max(fl, 1)
    return p, fl, s


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("--make", default="make")
    ap.add_argument("--build", default="build")
    ap.add_argument("parts", nargs="*", default=["c", "py"],
                    help="c (every C test), py (pytest), or C test names (e.g. test_fuse)")
    a = ap.parse_args(argv)
    bdir = os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build
    lines, tp, tf = [], 0, 0
    t0 = time.time()
    for part in a.parts:
        if part not in ("c", "py") and part not in C_PARTS:
            print("unknown part %s (c, py or one of %s)" % (part, " ".join(C_PARTS)), flush=True)
            return 1
        names = C_PARTS if part == "c" else ["pytest"] if part == "py" else [part]
        for name in names:
            t = time.time()
            p, f, s = run_py(a.make, bdir, extra) if name == "pytest" else run_c(a.make, bdir, name)
            lines.append("%s: %d passed, %d failed%s (%.1f s)" % (name, p, f, ", %d skipped" % s if s else "",
                                                                 time.time() - t))
            tp, tf = tp + p, tf + f
    print("", flush=True)
    for line in lines:
        print(line)
    print("total time %.1f s" % (time.time() - t0))
    print("%d passed, %d failed" % (tp, tf), flush=True)
    return 1 if tf else 0


if __name__ == "__main__":
    sys.exit(main())
