"""hang_guard - a pytest plugin (loaded by conftest.py): the backstop of the per-test time limit.

pytest-timeout (tests/requirements.txt; the limit is `timeout` in tests/pytest.ini, PYTEST_TIMEOUT
or --timeout overrides it) fails a test that runs too long with SIGALRM, and the run goes on. A
test stuck inside a C call (a deadlock in gpuos) never returns to Python, so that signal's handler
never runs: HANG_GRACE seconds (GPUOS_TEST_HANG_GRACE, default 60) after the limit this plugin's
timer thread names the test, dumps every thread's stack and ends pytest with status 1, which
tests/run_tests.py counts as a failure (its own limit per part, GPUOS_TEST_PART_TIMEOUT, is the
last resort). Without pytest-timeout installed the guard alone enforces the limit (no grace);
with pytest-timeout turned off (-p no:timeout) there is no per-test limit.
"""
import faulthandler
import os
import sys
import threading

import pytest


def mode(config):
    """"grace": pytest-timeout enforces the limit, the guard comes HANG_GRACE later; "alone":
    pytest-timeout is not installed, the guard enforces the limit; "off": -p no:timeout."""
    pm = config.pluginmanager
    if pm.has_plugin("timeout"):
        return "grace"
    return "off" if pm.is_blocked("timeout") else "alone"


def pytest_addoption(parser, pluginmanager):
    if not pluginmanager.has_plugin("timeout"):   # tests/pytest.ini's settings stay known (no warning)
        parser.addini("timeout", "per-test time limit in seconds (without pytest-timeout: hang_guard's)",
                      default="0")
        parser.addini("timeout_method", "pytest-timeout's (unused without it)", default="")


def pytest_report_header(config):
    m = mode(config)
    if m == "alone":
        return ("gpuos: pytest-timeout is not installed (python3 -m pip install -r tests/requirements.txt): "
                "a test past its time limit ends the run")
    if m == "off":
        return "gpuos: no per-test time limit (pytest-timeout turned off)"
    return None


def grace():
    try:
        return float(os.environ.get("GPUOS_TEST_HANG_GRACE", "") or 60.0)
    except ValueError:
        return 60.0


def time_limit(item):
    """The test's limit in seconds as pytest-timeout reads it (marker, --timeout, PYTEST_TIMEOUT,
    ini); 0: none."""
    m = item.get_closest_marker("timeout")
    if m is not None and (m.args or "timeout" in m.kwargs):
        v = m.args[0] if m.args else m.kwargs["timeout"]
        return float(v or 0)
    for get in (lambda: item.config.getoption("timeout"), lambda: os.environ.get("PYTEST_TIMEOUT"),
                lambda: item.config.getini("timeout")):
        try:
            v = get()
        except (ValueError, KeyError):
            v = None
        if v not in (None, ""):
            return float(v)
    return 0.0


def _hung(item, limit, after):
    try:
        capman = item.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.suspend_global_capture(in_=True)
        seed = getattr(sys.modules.get("conftest"), "SEED", None)
        why = ("still runs %g s after its time limit of %g s, where the limit's signal cannot reach it (inside a "
               "C call?)" % (after, limit) if after else
               "runs past its time limit of %g s (pytest-timeout, which would fail it alone, is not installed)" % limit)
        again = " (GPUOS_TEST_SEED=%s reproduces its inputs)" % seed if seed is not None else ""
        sys.stderr.write("\n\n%s\nHUNG: %s %s. Every thread's stack follows; the run ends here%s.\n" % (
            "+" * 78, item.nodeid, why, again))
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.write("%s\n" % ("+" * 78))
        sys.stderr.flush()
    finally:
        os._exit(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    m = mode(item.config)
    limit = time_limit(item) if m != "off" else 0.0
    timer = None
    if limit > 0:
        after = grace() if m == "grace" else 0.0
        timer = threading.Timer(limit + after, _hung, args=(item, limit, after))
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
