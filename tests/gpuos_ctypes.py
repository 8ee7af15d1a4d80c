"""gpuos_ctypes - a small ctypes binding of the whole public API of gpuos.h, plus NumPy helpers.

    from gpuos_ctypes import Context
    ctx = Context()                          # GPUOS_DEVICE_HOST unless $GPUOS_TEST_DEVICE says otherwise
    a = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), "f32")
    out = ctx.new("f32", (2, 3))
    ctx.submit("exp", out, [a])               # raises GpuosError on a refused task
    print(ctx.download(out))

The library is $GPUOS_LIB, else build/libgpuos.so of this checkout. Dtypes and ops are named as in
docs/OPERATORS.md ("f32", "add"); ids are their position in DTYPES / OPS (the ABI, never renumbered).
DTYPES and their facts (STORAGE, INTS, FLOATS, BITS, SIGNED) come from tests/generated/manifest.json.
Storage arrays use the NumPy type of STORAGE: bf16 is uint16 bits (see f32_to_bf16, bf16_to_f32).
Every generated convenience function of gpuos.h is bound too (lib.gpuos_add ...), from the header.
"""
import ctypes
import json
import os
import re
import weakref
from ctypes import (POINTER, Structure, byref, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint32,
                    c_uint64, c_void_p)

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "gpuos.h")

# ---------------------------------------------------------------- constants of gpuos.h
MAX_RANK = 8
MAX_INPUTS = 4
DEVICE_AUTO = -2
DEVICE_HOST = -1
AXES_ALL = 0xFFFFFFFF
SLICE_END = 2**63 - 1
BACKEND_HOST, BACKEND_CUDA = 0, 1

STATUS = ["GPUOS_OK", "GPUOS_ERR_INVALID_ARGUMENT", "GPUOS_ERR_NULL_POINTER", "GPUOS_ERR_SHAPE_MISMATCH",
          "GPUOS_ERR_DTYPE_MISMATCH", "GPUOS_ERR_UNSUPPORTED_DTYPE", "GPUOS_ERR_RANK", "GPUOS_ERR_BAD_STRIDES",
          "GPUOS_ERR_UNKNOWN_OP", "GPUOS_ERR_AXIS", "GPUOS_ERR_QUEUE_FULL", "GPUOS_ERR_TIMEOUT",
          "GPUOS_ERR_OUT_OF_MEMORY", "GPUOS_ERR_NO_DEVICE", "GPUOS_ERR_DEVICE_LOST", "GPUOS_ERR_COMPILE",
          "GPUOS_ERR_UNSUPPORTED", "GPUOS_ERR_NOT_VIEWABLE", "GPUOS_ERR_OUT_OF_BOUNDS", "GPUOS_ERR_ALIASING",
          "GPUOS_ERR_BAD_CONFIG", "GPUOS_ERR_CONTEXT_MISMATCH", "GPUOS_ERR_INTERNAL"]
for _i, _n in enumerate(STATUS):
    globals()[_n[len("GPUOS_"):]] = _i   # OK, ERR_SHAPE_MISMATCH, ...

# Dtypes in id order, with their facts, from gen/ops.py through tests/generated/manifest.json
# (written by `make gen`; every dtype, whichever the build generated code for).
MANIFEST = os.path.join(ROOT, "tests", "generated", "manifest.json")
with open(MANIFEST, encoding="utf-8") as _f:
    DTYPE_INFO = {d["name"]: d for d in sorted(json.load(_f)["dtypes"], key=lambda d: d["id"])}
DTYPES = list(DTYPE_INFO)
assert [d["id"] for d in DTYPE_INFO.values()] == list(range(len(DTYPES))), "manifest.json: dtype ids"
DTYPE_ID = {n: i for i, n in enumerate(DTYPES)}
# NumPy storage: the dtype's NumPy type, else its bits as an unsigned integer (bf16: uint16)
STORAGE = {n: np.dtype(d["numpy"] or "uint%d" % d["bits"]).type for n, d in DTYPE_INFO.items()}
ITEMSIZE = {n: np.dtype(t).itemsize for n, t in STORAGE.items()}
INTS = tuple(n for n, d in DTYPE_INFO.items() if d["class"] in ("sint", "uint"))
FLOATS = tuple(n for n, d in DTYPE_INFO.items() if d["class"] == "float")
BITS = {n: d["bits"] for n, d in DTYPE_INFO.items()}
SIGNED = {n: DTYPE_INFO[n]["class"] == "sint" for n in INTS}
# GPUOS_DTYPE_COUNT of gpuos.h: the first value that is not a dtype
DTYPE_COUNT = int(re.search(r"GPUOS_DTYPE_COUNT = (\d+)", open(HEADER).read()).group(1))
assert DTYPE_COUNT == len(DTYPES), "gpuos.h and tests/generated/manifest.json disagree: run `make gen`"

# Operators in id order (docs/OPERATORS.md). test_api checks this list against gpuos_op_name.
OPS = ["neg", "abs", "sign", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos",
       "tan", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "floor", "ceil", "round", "trunc",
       "reciprocal", "square", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite",
       "add", "sub", "mul", "div", "floordiv", "mod", "pow", "atan2", "minimum", "maximum", "eq", "ne", "lt",
       "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
       "bitwise_xor", "shift_left", "shift_right",
       "where", "clamp", "lerp", "fma", "cast", "copy", "fill", "arange",
       "sum", "prod", "mean", "min", "max", "argmin", "argmax", "any", "all", "norm2", "var", "std",
       "matmul", "softmax", "log_softmax", "layernorm", "rmsnorm"]
OP_ID = {n: i for i, n in enumerate(OPS)}
OP_COUNT = len(OPS)
assert OP_COUNT == 80


def dtype_id(d):
    return DTYPE_ID[d] if isinstance(d, str) else int(d)


def op_id(op):
    return OP_ID[op] if isinstance(op, str) else int(op)


# ---------------------------------------------------------------- structs
class Config(Structure):
    _fields_ = [("struct_size", c_size_t), ("api_version", c_int), ("device", c_int),
                ("queue_capacity", c_uint32), ("submit_timeout_ms", c_uint32), ("wait_timeout_ms", c_uint32),
                ("cache_dir", c_char_p), ("idle_ms", c_uint32), ("host_threads", c_int)]


class TensorInfo(Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int), ("shape", c_int64 * MAX_RANK),
                ("strides", c_int64 * MAX_RANK), ("offset", c_int64), ("numel", c_int64),
                ("contiguous", c_int), ("owned", c_int)]


class Task(Structure):
    _fields_ = [("struct_size", c_size_t), ("op", c_int), ("out", c_void_p), ("in_", c_void_p * MAX_INPUTS),
                ("scalar", c_double * 2), ("axes", c_uint32), ("axis", c_int), ("keepdim", c_int),
                ("correction", c_int),
                ("priority", c_int), ("deadline_us", c_uint32)]


def version_number(major, minor, patch):
    return major * 10000 + minor * 100 + patch


def header_version():
    text = open(HEADER).read()
    parts = [int(re.search(r"#define GPUOS_VERSION_%s (\d+)" % k, text).group(1)) for k in ("MAJOR", "MINOR", "PATCH")]
    return version_number(*parts)


def config_init():
    """GPUOS_CONFIG_INIT."""
    return Config(ctypes.sizeof(Config), header_version(), DEVICE_AUTO, 4096, 1000, 10000, None, 50, 0)


def task_init():
    """GPUOS_TASK_INIT."""
    t = Task()
    t.struct_size = ctypes.sizeof(Task)
    t.op = OP_COUNT
    t.axes = AXES_ALL
    t.axis = -1
    return t


# ---------------------------------------------------------------- the library
_P = c_void_p
_SIGNATURES = {
    # name: (restype, argtypes)
    "gpuos_version": (c_int, []),
    "gpuos_status_string": (c_char_p, [c_int]),
    "gpuos_dtype_size": (c_size_t, [c_int]),
    "gpuos_dtype_name": (c_char_p, [c_int]),
    "gpuos_op_name": (c_char_p, [c_int]),
    "gpuos_op_from_name": (c_int, [c_char_p]),
    "gpuos_op_supported": (c_int, [c_int, c_int, c_int]),
    "gpuos_create": (c_int, [POINTER(Config), POINTER(_P)]),
    "gpuos_destroy": (None, [_P]),
    "gpuos_context_backend": (c_int, [_P]),
    "gpuos_last_error": (c_char_p, [_P]),
    "gpuos_context_status": (c_int, [_P]),
    "gpuos_tensor_new": (c_int, [_P, c_int, c_int, POINTER(c_int64), POINTER(_P)]),
    "gpuos_tensor_scalar": (c_int, [_P, c_int, c_double, POINTER(_P)]),
    "gpuos_tensor_wrap": (c_int, [_P, _P, c_size_t, c_int, c_int, POINTER(c_int64), POINTER(c_int64),
                                  POINTER(_P)]),
    "gpuos_tensor_release": (None, [_P]),
    "gpuos_tensor_get_info": (c_int, [_P, POINTER(TensorInfo)]),
    "gpuos_upload": (c_int, [_P, _P, _P, c_size_t]),
    "gpuos_download": (c_int, [_P, _P, _P, c_size_t]),
    "gpuos_view_slice": (c_int, [_P, c_int, c_int64, c_int64, c_int64, POINTER(_P)]),
    "gpuos_view_permute": (c_int, [_P, POINTER(c_int), POINTER(_P)]),
    "gpuos_view_transpose": (c_int, [_P, c_int, c_int, POINTER(_P)]),
    "gpuos_view_broadcast_to": (c_int, [_P, c_int, POINTER(c_int64), POINTER(_P)]),
    "gpuos_view_reshape": (c_int, [_P, c_int, POINTER(c_int64), POINTER(_P)]),
    "gpuos_view_squeeze": (c_int, [_P, c_int, POINTER(_P)]),
    "gpuos_view_unsqueeze": (c_int, [_P, c_int, POINTER(_P)]),
    "gpuos_view_strided": (c_int, [_P, c_int, POINTER(c_int64), POINTER(c_int64), c_int64, POINTER(_P)]),
    "gpuos_submit": (c_int, [_P, POINTER(Task), POINTER(c_uint64)]),
    "gpuos_submit_many": (c_int, [_P, POINTER(Task), c_int, POINTER(c_uint64), POINTER(c_int)]),
    "gpuos_fence": (c_uint64, [_P]),
    "gpuos_fence_done": (c_int, [_P, c_uint64]),
    "gpuos_wait_fence": (c_int, [_P, c_uint64, c_uint32]),
    "gpuos_task_done": (c_int, [_P, c_uint64]),
    "gpuos_wait_task": (c_int, [_P, c_uint64, c_uint32]),
    "gpuos_wait": (c_int, [_P, c_uint32]),
    "gpuos_compile_device_code": (c_int, [c_int, c_int, c_char_p, c_size_t]),
    "gpuos_debug_pause": (c_int, [_P, c_int]),
    "gpuos_debug_compile_times": (None, [_P, POINTER(c_int), POINTER(c_double), POINTER(c_double),
                                         POINTER(c_double)]),
}

# C parameter types of the generated convenience functions -> ctypes
_CTYPE_OF = {"gpuos_context*": _P, "gpuos_tensor*": _P, "constgpuos_tensor*": _P, "int": c_int,
             "double": c_double, "float": ctypes.c_float, "uint32_t": c_uint32, "int64_t": c_int64,
             "uint64_t": c_uint64, "size_t": c_size_t, "constint*": POINTER(c_int),
             "constint64_t*": POINTER(c_int64), "gpuos_dtype": c_int, "gpuos_op": c_int,
             "uint64_t*": POINTER(c_uint64)}


def parse_convenience(header_text):
    """[(name, [(ctype_key, param_name)])] of the generated convenience region of gpuos.h."""
    m = re.search(r"BEGIN GENERATED gpuos\.h convenience.*?\n(.*?)/\* END GENERATED gpuos\.h convenience",
                  header_text, re.S)
    if not m:
        return []
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    body = re.sub(r"//[^\n]*", "", body)
    out = []
    for fm in re.finditer(r"GPUOS_API\s+gpuos_status\s+(\w+)\s*\(([^)]*)\)\s*;", body):
        params = []
        for p in fm.group(2).split(","):
            p = " ".join(p.split())
            if p in ("", "void"):
                continue
            pm = re.match(r"(.*?)(\w+)$", p)
            ctype = pm.group(1).replace(" ", "")
            params.append((ctype, pm.group(2)))
        out.append((fm.group(1), params))
    return out


def _load():
    path = os.environ.get("GPUOS_LIB") or os.path.join(ROOT, "build", "libgpuos.so")
    lib = ctypes.CDLL(path)
    lib.missing = []   # public functions the library does not export: only the tests calling them fail
    for name, (res, args) in _SIGNATURES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            lib.missing.append(name)
            setattr(lib, name, _missing(name))
            continue
        f.restype, f.argtypes = res, args
    lib.convenience = {}
    try:
        text = open(HEADER).read()
    except OSError:
        text = ""
    for name, params in parse_convenience(text):
        f = getattr(lib, name, None)
        if f is None or not all(c in _CTYPE_OF for c, _ in params):
            lib.convenience[name] = None   # declared but not exported, or a type this binding lacks
            continue
        f.restype, f.argtypes = c_int, [_CTYPE_OF[c] for c, _ in params]
        lib.convenience[name] = params
    return lib


def _missing(name):
    def call(*args):
        raise AttributeError("%s is not exported by the library" % name)
    return call


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def status_name(st):
    return STATUS[st] if 0 <= st < len(STATUS) else "status %d" % st


class GpuosError(Exception):
    def __init__(self, status, detail, call=""):
        self.status, self.detail = status, detail
        super().__init__("%s%s: %s" % (call + " -> " if call else "", status_name(status), detail))


def _i64arr(seq):
    seq = [int(x) for x in seq]
    return (c_int64 * max(1, len(seq)))(*seq)


# ---------------------------------------------------------------- bf16 and dtype helpers
def f32_to_bf16(x):
    """float32 values -> bf16 bits (uint16): round to nearest even on the uint32 bits; NaN stays NaN."""
    f = np.asarray(x, dtype=np.float32)
    u = np.ascontiguousarray(f).reshape(-1).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r).astype(np.uint16).reshape(f.shape)


def bf16_to_f32(b):
    """bf16 bits (uint16) -> float32 values (exact)."""
    b = np.asarray(b, dtype=np.uint16)
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)


def to_storage(values, dtype):
    """Values (any NumPy array) -> the storage array of dtype. Floats for bf16 are rounded from f32;
    integer values must already be in range (use reference.wrap for wrapping)."""
    a = np.asarray(values)
    if dtype == "bf16":
        if a.dtype == np.uint16:
            return a
        with np.errstate(over="ignore"):
            return f32_to_bf16(a.astype(np.float32))
    if dtype == "bool":
        return a.astype(np.bool_)
    with np.errstate(over="ignore"):    # beyond f16's range: inf, as gpuos rounds
        return a.astype(STORAGE[dtype])


def to_f64(storage, dtype):
    """Storage array -> float64 values (exact for every dtype but i64 beyond 2**53)."""
    a = np.asarray(storage)
    if dtype == "bf16":
        return bf16_to_f32(a).astype(np.float64)
    return a.astype(np.float64)


def default_device():
    v = os.environ.get("GPUOS_TEST_DEVICE", "host").strip().lower()
    if v in ("", "host"):
        return DEVICE_HOST
    if v == "auto":
        return DEVICE_AUTO
    if v in ("gpu", "cuda"):
        return 0
    return int(v)


# ---------------------------------------------------------------- context and tensors
class Context:
    def __init__(self, device=None, **fields):
        """fields: any gpuos_config field (queue_capacity=16, submit_timeout_ms=0, ...)."""
        self.lib = lib()
        cfg = config_init()
        cfg.device = default_device() if device is None else device
        for k, v in fields.items():
            setattr(cfg, k, v.encode() if isinstance(v, str) else v)
        p = _P()
        st = self.lib.gpuos_create(byref(cfg), byref(p))
        if st != OK:
            raise GpuosError(st, (self.lib.gpuos_last_error(None) or b"").decode(), "gpuos_create")
        self.ptr = p
        self._tensors = weakref.WeakSet()

    # -- context
    def close(self):
        if getattr(self, "ptr", None):
            for t in list(self._tensors):
                t.release()
            self.lib.gpuos_destroy(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def last_error(self):
        return (self.lib.gpuos_last_error(self.ptr) or b"").decode(errors="replace")

    def status(self):
        return self.lib.gpuos_context_status(self.ptr)

    def backend(self):
        return self.lib.gpuos_context_backend(self.ptr)

    def check(self, st, call=""):
        if st != OK:
            raise GpuosError(st, self.last_error(), call)
        return st

    # -- tensors
    def _adopt(self, p, keep=None):
        t = Tensor(self, p, keep)
        self._tensors.add(t)
        return t

    def new_raw(self, dtype, shape):
        """(status, Tensor or None)"""
        p = _P()
        st = self.lib.gpuos_tensor_new(self.ptr, dtype_id(dtype), len(shape), _i64arr(shape), byref(p))
        return st, (self._adopt(p) if st == OK else None)

    def new(self, dtype, shape):
        st, t = self.new_raw(dtype, shape)
        self.check(st, "gpuos_tensor_new(%s, %s)" % (dtype, tuple(shape)))
        return t

    def scalar(self, dtype, value):
        p = _P()
        self.check(self.lib.gpuos_tensor_scalar(self.ptr, dtype_id(dtype), float(value), byref(p)),
                   "gpuos_tensor_scalar")
        return self._adopt(p)

    def wrap_raw(self, buf, dtype, shape, strides=None, nbytes=None):
        """Wraps the memory of the NumPy array buf (kept alive by the tensor). (status, Tensor)."""
        p = _P()
        nbytes = buf.nbytes if nbytes is None else nbytes
        st = self.lib.gpuos_tensor_wrap(self.ptr, buf.ctypes.data_as(c_void_p), nbytes, dtype_id(dtype),
                                        len(shape), _i64arr(shape),
                                        None if strides is None else _i64arr(strides), byref(p))
        return st, (self._adopt(p, keep=buf) if st == OK else None)

    def wrap(self, buf, dtype, shape, strides=None, nbytes=None):
        st, t = self.wrap_raw(buf, dtype, shape, strides, nbytes)
        self.check(st, "gpuos_tensor_wrap")
        return t

    def upload(self, t, values):
        a = np.ascontiguousarray(to_storage(values, t.dtype))
        st = self.lib.gpuos_upload(self.ptr, t.ptr, a.ctypes.data_as(c_void_p), a.nbytes)
        self.check(st, "gpuos_upload")

    def download(self, t):
        """The tensor's elements as a storage array of its shape (bf16: uint16 bits)."""
        info = t.info()
        a = np.empty(info.shape, dtype=STORAGE[info.dtype])
        st = self.lib.gpuos_download(self.ptr, t.ptr, a.ctypes.data_as(c_void_p), a.nbytes)
        self.check(st, "gpuos_download")
        return a

    def tensor(self, values, dtype):
        """A new contiguous tensor holding values (converted with to_storage)."""
        a = to_storage(values, dtype)
        t = self.new(dtype, a.shape)
        self.upload(t, a)
        return t

    # -- submission
    def task(self, op, out, inputs=(), scalar=(0.0, 0.0), axes=AXES_ALL, axis=-1, keepdim=0, correction=0):
        tk = task_init()
        tk.op = op_id(op)
        tk.out = out.ptr if out is not None else None
        for i, x in enumerate(inputs):
            tk.in_[i] = x.ptr if x is not None else None
        tk.scalar[0], tk.scalar[1] = float(scalar[0]), float(scalar[1])
        tk.axes, tk.axis, tk.keepdim, tk.correction = axes & 0xFFFFFFFF, axis, keepdim, correction
        return tk

    def submit_task(self, tk):
        """(status, seq)"""
        seq = c_uint64(0)
        st = self.lib.gpuos_submit(self.ptr, byref(tk), byref(seq))
        return st, seq.value

    def submit_many(self, tasks):
        """gpuos_submit_many of a list of Task: (status, [seq of each queued task], n_queued)"""
        n = len(tasks)
        arr = (Task * max(n, 1))(*tasks)
        seqs = (c_uint64 * max(n, 1))()
        nq = ctypes.c_int(-1)
        st = self.lib.gpuos_submit_many(self.ptr, arr, n, seqs, byref(nq))
        return st, list(seqs)[:nq.value], nq.value

    def try_submit(self, op, out, inputs=(), **kw):
        return self.submit_task(self.task(op, out, inputs, **kw))[0]

    def submit(self, op, out, inputs=(), **kw):
        st, seq = self.submit_task(self.task(op, out, inputs, **kw))
        self.check(st, "gpuos_submit(%s)" % (op,))
        return seq

    def fence(self):
        return self.lib.gpuos_fence(self.ptr)

    def fence_done(self, seq):
        return self.lib.gpuos_fence_done(self.ptr, seq)

    def wait_fence(self, seq, timeout_ms=10000):
        return self.lib.gpuos_wait_fence(self.ptr, seq, timeout_ms)

    def task_done(self, seq):
        return self.lib.gpuos_task_done(self.ptr, seq)

    def wait_task(self, seq, timeout_ms=10000):
        return self.lib.gpuos_wait_task(self.ptr, seq, timeout_ms)

    def wait(self, timeout_ms=10000):
        return self.lib.gpuos_wait(self.ptr, timeout_ms)

    def debug_pause(self, paused):
        return self.lib.gpuos_debug_pause(self.ptr, int(paused))


class Tensor:
    def __init__(self, ctx, ptr, keep=None):
        self.ctx, self.ptr, self._keep = ctx, ptr, keep
        self._info = None

    def release(self):
        if self.ptr:
            self.ctx.lib.gpuos_tensor_release(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            if self.ptr and self.ctx.ptr:
                self.release()
        except Exception:
            pass

    def info(self):
        """namedtuple-like: dtype (name), rank, shape, strides, offset, numel, contiguous, owned."""
        if self._info is None:
            i = TensorInfo()
            st = self.ctx.lib.gpuos_tensor_get_info(self.ptr, byref(i))
            self.ctx.check(st, "gpuos_tensor_get_info")
            r = i.rank

            class Info:
                pass
            o = Info()
            o.dtype = DTYPES[i.dtype] if 0 <= i.dtype < len(DTYPES) else i.dtype
            o.rank, o.shape, o.strides = r, tuple(i.shape[:r]), tuple(i.strides[:r])
            o.offset, o.numel, o.contiguous, o.owned = i.offset, i.numel, i.contiguous, i.owned
            self._info = o
        return self._info

    @property
    def dtype(self):
        return self.info().dtype

    @property
    def shape(self):
        return self.info().shape

    # -- views: each returns (status, Tensor) from the *_raw form, or raises
    def _view(self, fn, *args, keep=None):
        p = _P()
        st = fn(self.ptr, *args, byref(p))
        return st, (self.ctx._adopt(p, keep if keep is not None else self._keep) if st == OK else None)

    def _checked(self, res, what):
        st, t = res
        self.ctx.check(st, what)
        return t

    def slice_raw(self, axis, start=0, stop=SLICE_END, step=1):
        return self._view(self.ctx.lib.gpuos_view_slice, axis, start, stop, step)

    def slice(self, axis, start=0, stop=SLICE_END, step=1):
        return self._checked(self.slice_raw(axis, start, stop, step), "gpuos_view_slice")

    def permute_raw(self, perm):
        return self._view(self.ctx.lib.gpuos_view_permute, (c_int * max(1, len(perm)))(*perm))

    def permute(self, perm):
        return self._checked(self.permute_raw(perm), "gpuos_view_permute")

    def transpose_raw(self, a0, a1):
        return self._view(self.ctx.lib.gpuos_view_transpose, a0, a1)

    def transpose(self, a0, a1):
        return self._checked(self.transpose_raw(a0, a1), "gpuos_view_transpose")

    def broadcast_to_raw(self, shape):
        return self._view(self.ctx.lib.gpuos_view_broadcast_to, len(shape), _i64arr(shape))

    def broadcast_to(self, shape):
        return self._checked(self.broadcast_to_raw(shape), "gpuos_view_broadcast_to")

    def reshape_raw(self, shape):
        return self._view(self.ctx.lib.gpuos_view_reshape, len(shape), _i64arr(shape))

    def reshape(self, shape):
        return self._checked(self.reshape_raw(shape), "gpuos_view_reshape")

    def squeeze_raw(self, axis):
        return self._view(self.ctx.lib.gpuos_view_squeeze, axis)

    def squeeze(self, axis):
        return self._checked(self.squeeze_raw(axis), "gpuos_view_squeeze")

    def unsqueeze_raw(self, axis):
        return self._view(self.ctx.lib.gpuos_view_unsqueeze, axis)

    def unsqueeze(self, axis):
        return self._checked(self.unsqueeze_raw(axis), "gpuos_view_unsqueeze")

    def strided_raw(self, shape, strides, offset=0):
        return self._view(self.ctx.lib.gpuos_view_strided, len(shape), _i64arr(shape), _i64arr(strides), offset)

    def strided(self, shape, strides, offset=0):
        return self._checked(self.strided_raw(shape, strides, offset), "gpuos_view_strided")


# ---------------------------------------------------------------- views with NumPy mirrors
def view_indices(shape, strides, offset):
    """Flat indices into the base memory of every element of a strided view (shape, strides and
    offset in elements), in row-major order of the view."""
    idx = np.full(tuple(int(s) for s in shape), int(offset), dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, strides)):
        sh = [1] * len(shape)
        sh[k] = int(n)
        idx = idx + (np.arange(int(n), dtype=np.int64) * int(s)).reshape(sh)
    return idx


def gather(base, shape, strides, offset):
    """The elements of the strided view (shape, strides, offset in elements) of the flat array base."""
    return np.asarray(base).reshape(-1)[view_indices(shape, strides, offset)]
