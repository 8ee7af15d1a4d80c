"""pytest configuration of the gpuos suite: the seed, the shared context, and the counts file.

Every run draws fresh random inputs from a new seed; GPUOS_TEST_SEED=N reuses one (each test derives
its own generator from the seed and its node id, so a single test reproduces on its own).
GPUOS_TEST_DEVICE picks the device (host, auto, or a CUDA ordinal; default host).
GPUOS_TEST_RESULTS=path writes {"passed", "failed", "skipped"} there at the end (used by `make test`).
"""
import json
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

pytest_plugins = ["hang_guard"]   # the backstop of the per-test time limit (tests/pytest.ini)

SEED = int(os.environ["GPUOS_TEST_SEED"]) if os.environ.get("GPUOS_TEST_SEED") else \
    int.from_bytes(os.urandom(4), "little")


def pytest_report_header(config):
    return "gpuos: GPUOS_TEST_SEED=%d GPUOS_TEST_DEVICE=%s" % (SEED, os.environ.get("GPUOS_TEST_DEVICE", "host"))


@pytest.fixture(scope="session")
def seed():
    return SEED


@pytest.fixture
def rng(request):
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture(scope="session")
def ctx():
    from gpuos_ctypes import Context
    c = Context()
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _context_healthy(request):
    """After each test that used the shared context, it must still be healthy (no sticky error)."""
    yield
    if "ctx" in request.fixturenames:
        from gpuos_ctypes import OK, status_name
        c = request.getfixturevalue("ctx")
        st = c.status()
        assert st == OK, "the shared context has a sticky error %s: %s" % (status_name(st), c.last_error())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        rep.sections.append(("reproduce", "GPUOS_TEST_SEED=%d python3 -m pytest '%s'" % (SEED, item.nodeid)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    st = terminalreporter.stats
    failed_ids = {r.nodeid for r in st.get("failed", []) + st.get("error", [])}
    passed = len({r.nodeid for r in st.get("passed", []) if r.when == "call"} - failed_ids)
    skipped = len({r.nodeid for r in st.get("skipped", [])} - failed_ids)
    failed = len(failed_ids)
    if failed:
        terminalreporter.write_line("reproduce with GPUOS_TEST_SEED=%d" % SEED)
    path = os.environ.get("GPUOS_TEST_RESULTS")
    if path:
        with open(path, "w") as f:
            json.dump({"passed": passed, "failed": failed, "skipped": skipped, "exitstatus": int(exitstatus),
                       "seed": SEED}, f)
