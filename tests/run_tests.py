"""run_tests.py - runs the parts of the gpuos test suite and totals them (make test, test-c, test-py).

    python3 tests/run_tests.py [--make make] [--build build] c py [-- pytest args]

Each part prints "PART: N passed, N failed" (pytest also ", N skipped": a skip is never counted as
passed); the last line is the total "N passed, N failed". Exit status 1 if anything failed.
A part that does not build counts as one failure.

A part that runs longer than GPUOS_TEST_PART_TIMEOUT seconds (default 1200; 0: no limit) is
killed, with every process it started (its process group), and counts as one more failure: a
hang cannot stall `make test`. Within pytest each test has its own limit (tests/pytest.ini).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_PARTS = ["test_header_c", "test_header_cpp", "test_threads", "test_order_stress", "test_expr", "test_rtops", "test_graph", "test_priority", "test_runs", "test_repeat", "test_fuse", "test_cudalog", "test_rtlink", "test_gate", "test_contexts", "test_slices", "test_semantics", "test_express"]
COUNTS = re.compile(r"(\d+) passed, (\d+) failed")
DEFAULT_PART_TIMEOUT = 1200.0


def part_timeout():
    """Seconds one part may run (GPUOS_TEST_PART_TIMEOUT; 0 or negative: no limit)."""
    v = os.environ.get("GPUOS_TEST_PART_TIMEOUT", "").strip()
    try:
        t = float(v) if v else DEFAULT_PART_TIMEOUT
    except ValueError:
        print("GPUOS_TEST_PART_TIMEOUT=%r is not a number: using %g s" % (v, DEFAULT_PART_TIMEOUT), flush=True)
        t = DEFAULT_PART_TIMEOUT
    return t if t > 0 else None


class Part:
    """A part's process, in a process group of its own, killed with the whole group once it has run
    for timeout seconds (None: no limit). stream=True: its output comes through a pipe (lines)."""

    def __init__(self, cmd, timeout, stream=False, **kw):
        self.timeout, self.timed_out = timeout, False
        if stream:
            kw.update(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.proc = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.lock = threading.Lock()
        self.reaped = False
        self.timer = None
        if timeout is not None:
            self.timer = threading.Timer(timeout, self._expire)
            self.timer.daemon = True
            self.timer.start()

    def _killpg(self):
        """SIGKILL to the part's group; only while its leader is not reaped (its id stays its own)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _expire(self):
        with self.lock:
            if not self.reaped:
                self.timed_out = True
                self._killpg()

    def _finish(self):
        with self.lock:
            self._killpg()             # what the part left running in its group (or all of it, on ^C)
            self.reaped = True
        if self.timer is not None:
            self.timer.cancel()
        return self.proc.wait()

    def wait(self):
        """The exit status, once the part has exited (or was killed); then nothing of its group runs."""
        try:
            os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)   # exited, not reaped yet
        except BaseException:          # ^C: the part is in a session of its own and did not get it
            self._finish()
            raise
        return self._finish()

    def lines(self):
        try:
            for line in self.proc.stdout:
                yield line
        except BaseException:
            self._finish()
            raise


def timed_out_message(name, timeout):
    return ("\n%s: TIMED OUT after %g s (GPUOS_TEST_PART_TIMEOUT): killed with its process group; counted as "
            "a failure" % (name, timeout))


def build(make, target):
    """make the target (a path as the Makefile names it: relative to the repository root)."""
    target = os.path.relpath(target, ROOT)
    r = subprocess.run(make.split() + ["--no-print-directory", "-s", target], cwd=ROOT)
    return r.returncode == 0


def run_c(make, bdir, name, timeout=None):
    exe = os.path.join(bdir, "tests", name)
    if not build(make, exe):
        print("%s: build failed" % name, flush=True)
        return 0, 1, 0
    return run_counted(name, [exe], timeout)


def run_counted(name, cmd, timeout=None):
    """Runs a part that prints "N passed, N failed" (its last such line counts); its output passes
    through as it comes (a slow or stuck test shows where it is). (passed, failed, 0)."""
    r = Part(cmd, timeout, stream=True, cwd=ROOT)
    m = None
    for line in r.lines():
        sys.stdout.write(line)
        sys.stdout.flush()
        m = COUNTS.search(line) or m
    rc = r.wait()
    p, f = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if r.timed_out:
        print(timed_out_message(name, timeout), flush=True)
        return p, f + 1, 0
    if m is None:
        print("%s: exited %d without a count line" % (name, rc), flush=True)
        return 0, 1, 0
    if rc != 0 and f == 0:
        print("%s: exited %d" % (name, rc))
        f = 1
    return p, f, 0


def run_py(make, bdir, args, timeout=None):
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
    r = Part(cmd, timeout, cwd=ROOT, env=env)
    rc = r.wait()
    if r.timed_out:
        print(timed_out_message("pytest", timeout), flush=True)
        return 0, 1, 0
    if not os.path.exists(res):
        print("pytest: exited %d without results (a test past its time limit ends the run: see above)" % rc,
              flush=True)
        return 0, 1, 0
    with open(res) as f:
        d = json.load(f)
    p, fl, s = d["passed"], d["failed"], d["skipped"]
    if rc not in (0, 5) and fl == 0:                # e.g. an internal error, interrupted run
        fl = 1
    if rc == 5 or p + fl == 0:                      # no test ran: that is a failure, not a pass
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
    timeout = part_timeout()
    t0 = time.time()
    for part in a.parts:
        if part not in ("c", "py") and part not in C_PARTS:
            print("unknown part %s (c, py or one of %s)" % (part, " ".join(C_PARTS)), flush=True)
            return 1
        names = C_PARTS if part == "c" else ["pytest"] if part == "py" else [part]
        for name in names:
            t = time.time()
            p, f, s = run_py(a.make, bdir, extra, timeout) if name == "pytest" else \
                run_c(a.make, bdir, name, timeout)
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
