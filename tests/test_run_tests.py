"""The suite's time limits: tests/run_tests.py kills a part that runs past GPUOS_TEST_PART_TIMEOUT
with its whole process group and counts a failure; within pytest a test past its limit fails
(pytest-timeout) and the run goes on, and one stuck where that limit's signal cannot reach it is
ended by tests/hang_guard.py."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

import run_tests

HERE = os.path.dirname(os.path.abspath(__file__))


def _alive(pid):
    """pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_part_past_its_limit_is_killed_with_its_group(tmp_path, capsys):
    """A part that printed counts and then hangs (with a child of its own) is killed, child too,
    at the limit; what it counted stays, plus one failure, with a message saying why."""
    script = textwrap.dedent("""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print("child", child.pid, flush=True)
        print("3 passed, 0 failed", flush=True)
        time.sleep(120)
    """)
    t0 = time.time()
    p, f, s = run_tests.run_counted("fake_part", [sys.executable, "-c", script], timeout=1.0)
    took = time.time() - t0
    out = capsys.readouterr().out
    assert (p, f, s) == (3, 1, 0), out
    assert took < 20, "the part ran %.1f s with a limit of 1 s" % took
    assert "fake_part: TIMED OUT after 1 s" in out and "GPUOS_TEST_PART_TIMEOUT" in out, out
    child = int(out.split("child ", 1)[1].split()[0])
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child), "the part's child %d outlived the kill" % child


def test_unstreamed_part_past_its_limit_is_killed():
    """The pytest part (its output not piped) is killed at the limit too."""
    t0 = time.time()
    r = run_tests.Part([sys.executable, "-c", "import time; time.sleep(120)"], 0.5)
    rc = r.wait()
    assert r.timed_out and rc != 0 and time.time() - t0 < 20
    r = run_tests.Part([sys.executable, "-c", "pass"], 60.0)
    assert r.wait() == 0 and not r.timed_out


@pytest.mark.parametrize("code,want", [
    ("print('4 passed, 0 failed')", (4, 0, 0)),
    ("print('5 passed, 2 failed'); raise SystemExit(1)", (5, 2, 0)),
    ("print('6 passed, 0 failed'); raise SystemExit(3)", (6, 1, 0)),     # exit status != 0 is a failure
    ("print('no counts')", (0, 1, 0)),
])
def test_part_within_its_limit_counts(capsys, code, want):
    assert run_tests.run_counted("fake_part", [sys.executable, "-c", code], timeout=60.0) == want
    assert "TIMED OUT" not in capsys.readouterr().out


def test_part_timeout_setting(monkeypatch):
    monkeypatch.delenv("GPUOS_TEST_PART_TIMEOUT", raising=False)
    assert run_tests.part_timeout() == run_tests.DEFAULT_PART_TIMEOUT == 1200
    monkeypatch.setenv("GPUOS_TEST_PART_TIMEOUT", "45")
    assert run_tests.part_timeout() == 45
    monkeypatch.setenv("GPUOS_TEST_PART_TIMEOUT", "0")
    assert run_tests.part_timeout() is None


def _pytest(tmp_path, body, **env):
    """Runs pytest on one test file (body), with hang_guard and tests/pytest.ini's time limit
    settings; (exit status, output, seconds)."""
    (tmp_path / "test_limits.py").write_text(textwrap.dedent(body))
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\ntimeout = 300\ntimeout_method = signal\n")
    e = {k: v for k, v in os.environ.items() if k not in ("GPUOS_TEST_RESULTS", "PYTEST_ADDOPTS")}
    e["PYTHONPATH"] = HERE + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env)
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-c", str(ini), "-p", "no:cacheprovider",
                        "-p", "hang_guard"], cwd=str(tmp_path), env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    return r.returncode, r.stdout, time.time() - t0


def test_pytest_limit_fails_the_slow_test(tmp_path):
    """pytest.ini's limit (here PYTEST_TIMEOUT=0.5) fails a test that runs longer; the next runs."""
    try:
        import pytest_timeout  # noqa: F401
    except ImportError:
        pytest.fail("pytest-timeout is not installed: python3 -m pip install -r tests/requirements.txt")
    rc, out, took = _pytest(tmp_path, """
        import time
        def test_slow():
            time.sleep(60)
        def test_next():
            pass
    """, PYTEST_TIMEOUT="0.5", GPUOS_TEST_HANG_GRACE="30")
    assert rc == 1 and "1 failed, 1 passed" in out and "Timeout" in out, out
    assert took < 30, "%.1f s" % took


def test_hang_guard_ends_a_test_stuck_out_of_reach(tmp_path):
    """A test whose thread never sees the limit's SIGALRM (as one stuck inside a C call) is ended
    by hang_guard after the grace: named, stacks dumped, exit status 1."""
    rc, out, took = _pytest(tmp_path, """
        import signal, time
        def test_stuck():
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            time.sleep(60)
    """, PYTEST_TIMEOUT="0.5", GPUOS_TEST_HANG_GRACE="0.5")
    assert rc == 1, out
    assert "HUNG: test_limits.py::test_stuck" in out and "test_stuck" in out.split("HUNG:", 1)[1], out
    assert took < 30, "%.1f s" % took


def test_hang_guard_alone_without_pytest_timeout(tmp_path):
    """Without pytest-timeout (here: plugins not auto-loaded) the guard alone ends a test past the
    limit; a test within it passes."""
    rc, out, took = _pytest(tmp_path, """
        import time
        def test_quick():
            pass
        def test_slow():
            time.sleep(60)
    """, PYTEST_TIMEOUT="0.5", GPUOS_TEST_HANG_GRACE="30", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    assert rc == 1, out
    assert "HUNG: test_limits.py::test_slow runs past its time limit of 0.5 s (pytest-timeout" in out, out
    assert "HUNG: test_limits.py::test_quick" not in out, out
    assert took < 20, "%.1f s" % took
