"""The generated device code compiles with NVRTC for sm_90 (no GPU needed: NVRTC is loaded at run
time). A machine where NVRTC cannot be loaded FAILS this test, unless GPUOS_TEST_ALLOW_NO_NVRTC=1,
which turns it into a skip (never a pass)."""
import ctypes
import os

import pytest

from gpuos_ctypes import ERR_UNSUPPORTED, OK, lib, status_name


def test_compile_device_code_sm90():
    log = ctypes.create_string_buffer(1 << 20)
    st = lib().gpuos_compile_device_code(9, 0, log, len(log))
    text = log.value.decode(errors="replace")
    if st == ERR_UNSUPPORTED:
        msg = "NVRTC cannot be loaded: %s" % (text or status_name(st))
        if os.environ.get("GPUOS_TEST_ALLOW_NO_NVRTC") == "1":
            pytest.skip(msg)
        pytest.fail(msg + " (set GPUOS_TEST_ALLOW_NO_NVRTC=1 on a machine without NVRTC)")
    assert st == OK, "gpuos_compile_device_code(9, 0): %s\n%s" % (status_name(st), text[-8000:])


def test_compile_device_code_without_log():
    st = lib().gpuos_compile_device_code(9, 0, None, 0)
    if st == ERR_UNSUPPORTED and os.environ.get("GPUOS_TEST_ALLOW_NO_NVRTC") == "1":
        pytest.skip("NVRTC cannot be loaded")
    assert st == OK, "gpuos_compile_device_code(9, 0, NULL, 0): %s" % status_name(st)
