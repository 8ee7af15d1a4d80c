"""Error paths: every refused call returns the exact status of docs/OPERATORS.md ("Errors at
submission") and gpuos.h, leaves a non-empty gpuos_last_error, queues nothing, and the context
stays usable (a correct op runs right after)."""
import ctypes

import numpy as np
import pytest

import reference as R
import gpuos_ctypes as G
import gpuos_ctypes as E   # status constants: E.ERR_SHAPE_MISMATCH ...
from gpuos_ctypes import (AXES_ALL, DTYPES, OK, OP_COUNT, OPS, STATUS, Config, Context, Task, _i64arr, config_init, lib,
                          status_name)
from opspec import SPEC_OPS


def usable(ctx):
    """The context still runs a correct op with the right result."""
    a = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), "f32")
    b = ctx.tensor(np.full((3,), 0.5, dtype=np.float32), "f32")
    out = ctx.new("f32", (2, 3))
    ctx.submit("add", out, [a, b])
    got = ctx.download(out)
    assert np.array_equal(got, np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5), "context unusable after an error"
    assert ctx.status() == OK


def names_status(msg, st):
    """docs/OPERATORS.md: every gpuos_last_error string starts with the status name
    ("GPUOS_ERR_AXIS: sum: ...")."""
    name = status_name(st)
    return msg.startswith(name) and not (msg[len(name):len(name) + 1].isalnum() or msg[len(name):len(name) + 1] == "_")


def expect(ctx, st, code, what):
    assert st == code, "%s: got %s, expected %s (%s)" % (what, status_name(st), status_name(code), ctx.last_error())
    msg = ctx.last_error()
    assert msg != "", "%s: gpuos_last_error is empty after %s" % (what, status_name(st))
    assert names_status(msg, st), "%s: gpuos_last_error %r does not start with %s" % (what, msg, status_name(st))
    usable(ctx)


def f32(ctx, shape, fill=1.0):
    return ctx.tensor(np.full(shape, fill, dtype=np.float32), "f32")


def submit_status(ctx, op, out, ins, **kw):
    fence = ctx.fence()
    st = ctx.try_submit(op, out, ins, **kw)
    if st != OK:
        assert ctx.fence() == fence, "%s refused with %s but the fence moved: something was queued" % (
            op, status_name(st))
    return st


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((3, 4), (3, 4), (3, 5)),
    ((3, 4), (3, 4), (4, 3)),
    ((3, 4), (4,), (1, 3, 4)),   # the output must be exactly the broadcast shape
    ((3, 1), (1, 4), (3, 1)),
    ((3, 4), (3, 4), ()),
    ((), (), (1,)),
])
def test_wrong_output_shape(ctx, a_shape, b_shape, out_shape):
    st = submit_status(ctx, "add", ctx.new("f32", out_shape), [f32(ctx, a_shape), f32(ctx, b_shape)])
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "add %s + %s -> %s" % (a_shape, b_shape, out_shape))


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (3,)), ((2, 3), (3, 2)), ((4,), (5,)), ((2, 1, 3), (4, 2))])
def test_not_broadcastable(ctx, a_shape, b_shape):
    out_shape = tuple(max(x, y) for x, y in zip((1,) * (3 - len(a_shape)) + a_shape, (1,) * (3 - len(b_shape)) + b_shape))
    st = submit_status(ctx, "add", ctx.new("f32", out_shape), [f32(ctx, a_shape), f32(ctx, b_shape)])
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "add %s + %s" % (a_shape, b_shape))


def test_unary_input_does_not_broadcast(ctx):
    """A unary op's output must have its input's shape (only binary/ternary ops and copy broadcast)."""
    st = submit_status(ctx, "neg", ctx.new("f32", (3, 4)), [f32(ctx, (1, 4))])
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "neg (1, 4) -> (3, 4)")


def test_ternary_not_broadcastable(ctx):
    st = submit_status(ctx, "where", ctx.new("f32", (3, 4)), [ctx.tensor(np.ones((3, 4), bool), "bool"),
                                                              f32(ctx, (3, 4)), f32(ctx, (2, 4))])
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "where with b (2, 4)")


@pytest.mark.parametrize("op,in_shape,axes,keepdim,out_shape", [
    ("sum", (3, 4), 0b01, 0, (3,)),
    ("sum", (3, 4), 0b01, 0, (1, 4)),   # keepdim 0 wants (4,)
    ("sum", (3, 4), 0b01, 1, (4,)),     # keepdim 1 wants (1, 4)
    ("max", (3, 4), AXES_ALL, 0, (1,)),
    ("argmax", (3, 4), 0b10, 0, (4,)),
])
def test_reduction_wrong_output_shape(ctx, op, in_shape, axes, keepdim, out_shape):
    odt = "i64" if op == "argmax" else "f32"
    st = submit_status(ctx, op, ctx.new(odt, out_shape), [f32(ctx, in_shape)], axes=axes, keepdim=keepdim)
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "%s %s axes=%#x keepdim=%d -> %s" % (op, in_shape, axes, keepdim, out_shape))


@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((3, 4), (5, 2), (3, 2)),       # K differs
    ((3, 4), (4, 2), (3, 3)),       # wrong output
    ((2, 3, 4), (3, 4, 2), (3, 3, 2)),   # batch axes do not broadcast
    ((4,), (4,), (1,)),             # vector . vector is 0-d
    ((3, 4), (4,), (3, 1)),         # matrix @ vector is (3,)
])
def test_matmul_shapes(ctx, a_shape, b_shape, out_shape):
    st = submit_status(ctx, "matmul", ctx.new("f32", out_shape), [f32(ctx, a_shape), f32(ctx, b_shape)])
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "matmul %s @ %s -> %s" % (a_shape, b_shape, out_shape))


def test_norm_weight_shape_and_dtype(ctx):
    x = f32(ctx, (3, 4))
    out = ctx.new("f32", (3, 4))
    st = submit_status(ctx, "layernorm", out, [x, f32(ctx, (3,)), None], scalar=(1e-5, 0))
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "layernorm weight of shape (3,) for rows of 4")
    st = submit_status(ctx, "rmsnorm", out, [x, f32(ctx, (3, 4))], scalar=(1e-5, 0))
    expect(ctx, st, E.ERR_SHAPE_MISMATCH, "rmsnorm weight of shape (3, 4)")
    st = submit_status(ctx, "layernorm", out, [x, None, ctx.tensor(np.ones(4), "f64")], scalar=(1e-5, 0))
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "layernorm bias f64 for x f32")


# ---------------------------------------------------------------- dtypes
def test_input_dtype_mismatch(ctx):
    st = submit_status(ctx, "add", ctx.new("f32", (4,)), [f32(ctx, (4,)), ctx.tensor(np.ones(4), "f64")])
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "add f32 + f64")
    st = submit_status(ctx, "fma", ctx.new("i32", (4,)), [ctx.tensor(np.ones(4), "i32")] * 2 +
                       [ctx.tensor(np.ones(4), "i64")])
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "fma i32, i32, i64")
    cond = ctx.tensor(np.ones(4, bool), "bool")
    st = submit_status(ctx, "where", ctx.new("f32", (4,)), [cond, f32(ctx, (4,)), ctx.tensor(np.ones(4), "f16")])
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "where a f32, b f16")
    st = submit_status(ctx, "where", ctx.new("f32", (4,)), [f32(ctx, (4,)), f32(ctx, (4,)), f32(ctx, (4,))])
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "where with an f32 condition")
    st = submit_status(ctx, "matmul", ctx.new("f32", (2, 2)), [f32(ctx, (2, 2)), ctx.tensor(np.ones((2, 2)), "bf16")])
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "matmul f32 @ bf16")


@pytest.mark.parametrize("op,in_dt,out_dt", [
    ("add", "f32", "f64"), ("neg", "i32", "i64"), ("eq", "f32", "f32"), ("lt", "i8", "i8"), ("isnan", "f32", "f32"),
    ("argmax", "f32", "i32"), ("argmin", "i64", "f32"), ("any", "f32", "f32"), ("sum", "f16", "f32"),
    ("logical_not", "i32", "i32"), ("copy", "f32", "f64"), ("softmax", "f32", "f16"),
])
def test_wrong_output_dtype(ctx, op, in_dt, out_dt):
    x = ctx.tensor(np.ones((2, 3)), in_dt)
    spec = SPEC_OPS[op]
    if spec.section.startswith("Reductions"):
        out, kw = ctx.new(out_dt, ()), {}
    else:
        out, kw = ctx.new(out_dt, (2, 3)), {}
    ins = [x] * (2 if spec.section.startswith("Binary") else 1)
    st = submit_status(ctx, op, out, ins, **kw)
    expect(ctx, st, E.ERR_DTYPE_MISMATCH, "%s on %s into %s" % (op, in_dt, out_dt))


def _unsupported_cases():
    return [(op, dt) for op in OPS for dt in DTYPES if dt not in SPEC_OPS[op].dtypes]


@pytest.mark.parametrize("op,dtype", _unsupported_cases(), ids=["%s-%s" % c for c in _unsupported_cases()])
def test_unsupported_dtype(ctx, op, dtype):
    """Every op on every dtype outside its set (sqrt on i32, arange on bool, ...)."""
    spec = SPEC_OPS[op]
    odt = R.out_dtype_of(op, dtype, spec.out)
    sec = spec.section
    if op == "matmul":
        ins, out = [ctx.tensor(np.ones((2, 2)), dtype)] * 2, ctx.new(odt, (2, 2))
    elif sec.startswith("Reductions"):
        ins, out = [ctx.tensor(np.ones((2, 3)), dtype)], ctx.new(odt, ())
    elif op in ("fill", "arange"):
        ins, out = [], ctx.new(dtype, (2, 3))
    else:
        n = 2 if sec.startswith("Binary") else 3 if sec.startswith("Ternary") else 1
        ins = [ctx.tensor(np.ones((2, 3)), dtype) for _ in range(n)]
        if op == "where":
            ins[0] = ctx.tensor(np.ones((2, 3), bool), "bool")
        out = ctx.new(odt, (2, 3))
    st = submit_status(ctx, op, out, ins, scalar=(1e-5, 1.0))
    expect(ctx, st, E.ERR_UNSUPPORTED_DTYPE, "%s on %s" % (op, dtype))


def test_context_mismatch(ctx):
    with Context() as other:
        b = other.tensor(np.ones(4, dtype=np.float32), "f32")
        st = submit_status(ctx, "add", ctx.new("f32", (4,)), [f32(ctx, (4,)), b])
        expect(ctx, st, E.ERR_CONTEXT_MISMATCH, "add with a tensor of another context")
        st = submit_status(ctx, "neg", other.new("f32", (4,)), [f32(ctx, (4,))])
        expect(ctx, st, E.ERR_CONTEXT_MISMATCH, "neg into a tensor of another context")
        usable(other)
        b.release()


# ---------------------------------------------------------------- NULL
def test_null_submit(ctx):
    L = lib()
    a, out = f32(ctx, (4,)), ctx.new("f32", (4,))
    tk = ctx.task("neg", out, [a])
    assert L.gpuos_submit(None, ctypes.byref(tk), None) == E.ERR_NULL_POINTER, "gpuos_submit(NULL ctx)"
    usable(ctx)
    expect(ctx, L.gpuos_submit(ctx.ptr, None, None), E.ERR_NULL_POINTER, "gpuos_submit(task NULL)")
    expect(ctx, submit_status(ctx, "neg", None, [a]), E.ERR_NULL_POINTER, "neg with out NULL")
    expect(ctx, submit_status(ctx, "neg", out, [None]), E.ERR_NULL_POINTER, "neg with input NULL")
    expect(ctx, submit_status(ctx, "add", out, [a, None]), E.ERR_NULL_POINTER, "add with b NULL")
    expect(ctx, submit_status(ctx, "add", out, [None, a]), E.ERR_NULL_POINTER, "add with a NULL")
    expect(ctx, submit_status(ctx, "where", out, [None, a, a]), E.ERR_NULL_POINTER, "where with cond NULL")
    expect(ctx, submit_status(ctx, "fma", out, [a, a, None]), E.ERR_NULL_POINTER, "fma with c NULL")
    expect(ctx, submit_status(ctx, "layernorm", ctx.new("f32", (2, 4)), [None], scalar=(1e-5, 0)),
           E.ERR_NULL_POINTER, "layernorm with x NULL")
    expect(ctx, submit_status(ctx, "sum", ctx.new("f32", ()), [None]), E.ERR_NULL_POINTER, "sum with a NULL")


def test_null_api_arguments(ctx):
    L = lib()
    p = ctypes.c_void_p()
    shape = _i64arr([4])
    cfg = config_init()
    cfg.device = G.default_device()
    assert L.gpuos_create(ctypes.byref(cfg), None) == E.ERR_NULL_POINTER, "gpuos_create(out NULL)"
    assert L.gpuos_tensor_new(None, 8, 1, shape, ctypes.byref(p)) == E.ERR_NULL_POINTER, "gpuos_tensor_new(ctx NULL)"
    expect(ctx, L.gpuos_tensor_new(ctx.ptr, 8, 1, shape, None), E.ERR_NULL_POINTER, "gpuos_tensor_new(out NULL)")
    expect(ctx, L.gpuos_tensor_new(ctx.ptr, 8, 1, None, ctypes.byref(p)), E.ERR_NULL_POINTER,
           "gpuos_tensor_new(shape NULL, rank 1)")
    t = f32(ctx, (4,))
    buf = np.zeros(4, dtype=np.float32)
    expect(ctx, L.gpuos_upload(ctx.ptr, None, buf.ctypes.data, 16), E.ERR_NULL_POINTER, "gpuos_upload(dst NULL)")
    expect(ctx, L.gpuos_upload(ctx.ptr, t.ptr, None, 16), E.ERR_NULL_POINTER, "gpuos_upload(src NULL)")
    expect(ctx, L.gpuos_download(ctx.ptr, t.ptr, None, 16), E.ERR_NULL_POINTER, "gpuos_download(dst NULL)")
    expect(ctx, L.gpuos_download(ctx.ptr, None, buf.ctypes.data, 16), E.ERR_NULL_POINTER, "gpuos_download(src NULL)")
    assert L.gpuos_tensor_get_info(t.ptr, None) == E.ERR_NULL_POINTER, "gpuos_tensor_get_info(info NULL)"
    assert L.gpuos_tensor_get_info(None, ctypes.byref(G.TensorInfo())) == E.ERR_NULL_POINTER
    assert L.gpuos_view_slice(None, 0, 0, 2, 1, ctypes.byref(p)) == E.ERR_NULL_POINTER, "gpuos_view_slice(t NULL)"
    assert L.gpuos_view_slice(t.ptr, 0, 0, 2, 1, None) == E.ERR_NULL_POINTER, "gpuos_view_slice(out NULL)"
    assert L.gpuos_view_reshape(t.ptr, 1, None, ctypes.byref(p)) == E.ERR_NULL_POINTER, "gpuos_view_reshape(shape NULL)"
    assert L.gpuos_view_permute(t.ptr, None, ctypes.byref(p)) == E.ERR_NULL_POINTER, "gpuos_view_permute(perm NULL)"
    assert L.gpuos_tensor_scalar(ctx.ptr, 8, 1.0, None) == E.ERR_NULL_POINTER, "gpuos_tensor_scalar(out NULL)"
    usable(ctx)


def test_out_null_on_failure(ctx):
    """Every function that makes an object sets *out to NULL when it fails (gpuos.h, ERROR MODEL),
    whatever *out held before: a caller reusing a handle variable never keeps a stale one."""
    L = lib()
    t = f32(ctx, (4, 4))
    bad, five = _i64arr([-1]), _i64arr([5])
    perm = (ctypes.c_int * 2)(0, 0)
    buf = np.zeros(4, dtype=np.float32)
    cases = [
        ("gpuos_tensor_new (shape -1)", lambda p: L.gpuos_tensor_new(ctx.ptr, 8, 1, bad, p)),
        ("gpuos_tensor_new (ctx NULL)", lambda p: L.gpuos_tensor_new(None, 8, 1, five, p)),
        ("gpuos_tensor_scalar (ctx NULL)", lambda p: L.gpuos_tensor_scalar(None, 8, 1.0, p)),
        ("gpuos_tensor_wrap (data NULL)", lambda p: L.gpuos_tensor_wrap(ctx.ptr, None, 64, 8, 1, five, None, p)),
        ("gpuos_tensor_wrap (too few bytes)", lambda p: L.gpuos_tensor_wrap(ctx.ptr, buf.ctypes.data, 4, 8, 1, five, None, p)),
        ("gpuos_view_slice (axis 5)", lambda p: L.gpuos_view_slice(t.ptr, 5, 0, 1, 1, p)),
        ("gpuos_view_permute (repeated axis)", lambda p: L.gpuos_view_permute(t.ptr, perm, p)),
        ("gpuos_view_transpose (axis 5)", lambda p: L.gpuos_view_transpose(t.ptr, 0, 5, p)),
        ("gpuos_view_squeeze (size 4)", lambda p: L.gpuos_view_squeeze(t.ptr, 0, p)),
        ("gpuos_view_unsqueeze (axis 7)", lambda p: L.gpuos_view_unsqueeze(t.ptr, 7, p)),
        ("gpuos_view_reshape (5 of 16)", lambda p: L.gpuos_view_reshape(t.ptr, 1, five, p)),
        ("gpuos_view_broadcast_to ([-1])", lambda p: L.gpuos_view_broadcast_to(t.ptr, 1, bad, p)),
        ("gpuos_view_strided (strides NULL, rank 1)", lambda p: L.gpuos_view_strided(t.ptr, 1, five, None, 0, p)),
        ("gpuos_graph_create (ctx NULL)", lambda p: L.gpuos_graph_create(None, p)),
    ]
    for what, call in cases:
        p = ctypes.c_void_p(1)  # a stale non-NULL handle
        st = call(ctypes.byref(p))
        assert st != OK, "%s succeeded" % what
        assert not p.value, "%s: *out still %r after %s" % (what, p.value, STATUS[st] if 0 <= st < len(STATUS) else st)
    usable(ctx)


# ---------------------------------------------------------------- ranks, strides, views
def test_rank_above_max(ctx):
    L = lib()
    p = ctypes.c_void_p()
    shape9 = _i64arr([1] * 9)
    expect(ctx, L.gpuos_tensor_new(ctx.ptr, 8, 9, shape9, ctypes.byref(p)), E.ERR_RANK, "gpuos_tensor_new rank 9")
    assert not p.value, "*out set on failure"
    buf = np.zeros(4, dtype=np.float32)
    st, _ = ctx.wrap_raw(buf, "f32", [1] * 9)
    expect(ctx, st, E.ERR_RANK, "gpuos_tensor_wrap rank 9")
    t = f32(ctx, (4,))
    st, _ = t.strided_raw([1] * 9, [0] * 9, 0)
    expect(ctx, st, E.ERR_RANK, "gpuos_view_strided rank 9")
    st, _ = t.reshape_raw([1] * 8 + [4])
    expect(ctx, st, E.ERR_RANK, "gpuos_view_reshape rank 9")
    st, _ = t.broadcast_to_raw([1] * 8 + [4])
    expect(ctx, st, E.ERR_RANK, "gpuos_view_broadcast_to rank 9")
    t8 = ctx.new("f32", [1] * 8)
    st, _ = t8.unsqueeze_raw(0)
    expect(ctx, st, E.ERR_RANK, "gpuos_view_unsqueeze of a rank-8 tensor")


@pytest.mark.parametrize("op,ins_shapes,out_shape", [
    ("softmax", [()], ()), ("log_softmax", [()], ()), ("layernorm", [()], ()), ("rmsnorm", [()], ()),
    ("matmul", [(), (3,)], (3,)), ("matmul", [(3,), ()], (3,)),
])
def test_rank_not_allowed(ctx, op, ins_shapes, out_shape):
    """Ops whose manifest min_rank is 1 refuse 0-d operands with GPUOS_ERR_RANK."""
    st = submit_status(ctx, op, ctx.new("f32", out_shape), [f32(ctx, s) for s in ins_shapes], axis=-1,
                       scalar=(1e-5, 0))
    expect(ctx, st, E.ERR_RANK, "%s on 0-d operands" % op)


def test_view_strided_out_of_bounds(ctx):
    t = f32(ctx, (6,))
    for shape, strides, offset, what in [((4,), (2,), 0, "reaches element 6 of 6"),
                                         ((3,), (1,), 4, "offset 4 + 3 elements of 6"),
                                         ((2,), (1,), -1, "negative offset"),
                                         ((3,), (-1,), 1, "negative stride below element 0"),
                                         ((2, 3), (3, 1), 1, "2x3 at offset 1 of 6"),
                                         ((1,), (1,), 6, "offset at the end")]:
        st, _ = t.strided_raw(shape, strides, offset)
        expect(ctx, st, E.ERR_BAD_STRIDES, "gpuos_view_strided %s: %s" % (what, (shape, strides, offset)))
    st, v = t.strided_raw((3,), (-2,), 5)       # in bounds: elements 5, 3, 1
    assert st == OK, "gpuos_view_strided (3,) stride -2 offset 5 of 6: %s" % status_name(st)


def test_wrap_out_of_bounds(ctx):
    buf = np.zeros(10, dtype=np.float32)
    for shape, strides, nbytes, what in [((3, 4), None, 40, "12 elements in 10"),
                                         ((2, 5), (5, 1), 36, "10 elements in 9 (bytes 36)"),
                                         ((2, 5), (6, 1), 40, "strides (6, 1) reach element 10"),
                                         ((3,), (-1,), 40, "a negative stride reaches before data"),
                                         ((1,), None, 3, "bytes less than one element")]:
        st, _ = ctx.wrap_raw(buf, "f32", shape, strides, nbytes)
        expect(ctx, st, E.ERR_BAD_STRIDES, "gpuos_tensor_wrap %s" % what)


def test_output_zero_stride_and_self_overlap(ctx):
    x = f32(ctx, (4,))
    bc = f32(ctx, (4,)).broadcast_to((3, 4))
    st = submit_status(ctx, "neg", bc, [f32(ctx, (3, 4))])
    expect(ctx, st, E.ERR_BAD_STRIDES, "output with stride 0 over an axis of 3")
    base = f32(ctx, (16,))
    st = submit_status(ctx, "neg", base.strided((3, 3), (1, 1), 0), [f32(ctx, (3, 3))])
    expect(ctx, st, E.ERR_BAD_STRIDES, "output overlapping itself (strides 1, 1)")
    st = submit_status(ctx, "fill", base.strided((2, 4), (2, 1), 0), [], scalar=(1.0, 0))
    expect(ctx, st, E.ERR_BAD_STRIDES, "fill into a view overlapping itself (strides 2, 1)")
    # stride 0 over an axis of size 1 is fine
    out = base.strided((1, 4), (0, 1), 0)
    assert submit_status(ctx, "neg", out, [x.reshape((1, 4))]) == OK, ctx.last_error()
    assert np.array_equal(ctx.download(out), -np.ones((1, 4), dtype=np.float32))


def test_upload_into_overlapping_view(ctx):
    """gpuos_upload refuses a view that writes one element several times, as tasks do (on a
    GPU it is a copy task into the view; the host executor accepted it, the last write won)."""
    L = lib()
    base = f32(ctx, (2, 4))
    before = np.arange(8, dtype=np.float32).reshape(2, 4)
    ctx.upload(base, before)
    src = np.ones((3, 4), dtype=np.float32)
    for what, view in [("a row broadcast to 3 rows", base.slice(0, 1, 2, 1).broadcast_to((3, 4))),
                       ("strides 1, 1", base.strided((3, 4), (1, 1), 0))]:
        st = L.gpuos_upload(ctx.ptr, view.ptr, src.ctypes.data, src.nbytes)
        expect(ctx, st, E.ERR_BAD_STRIDES, "upload into %s" % what)
        assert "gpuos_upload" in ctx.last_error(), ctx.last_error()
    assert np.array_equal(ctx.download(base), before), "a refused upload changed the tensor"
    ok = base.strided((1, 4), (0, 1), 4)  # stride 0 over a size-1 axis is fine
    st = L.gpuos_upload(ctx.ptr, ok.ptr, src.ctypes.data, 16)
    assert st == OK, ctx.last_error()
    assert np.array_equal(ctx.download(base)[1], np.ones(4, dtype=np.float32))
    usable(ctx)


def test_aliasing(ctx):
    x = f32(ctx, (10,))
    y = f32(ctx, (4, 4))
    st = submit_status(ctx, "add", x.slice(0, 2, 10), [x.slice(0, 0, 8), f32(ctx, (8,))])
    expect(ctx, st, E.ERR_ALIASING, "add: output x[2:10], input x[0:8]")
    st = submit_status(ctx, "neg", y.transpose(0, 1), [y])
    expect(ctx, st, E.ERR_ALIASING, "neg: output the transpose of the input")
    sq = f32(ctx, (2, 2))
    st = submit_status(ctx, "neg", sq.transpose(0, 1), [sq])
    expect(ctx, st, E.ERR_ALIASING, "neg: output the transpose of a 2x2 input")
    st = submit_status(ctx, "add", sq.strided((2, 2), (1, 2), 0), [sq, sq])
    expect(ctx, st, E.ERR_ALIASING, "add: output a column-major view of the 2x2 inputs")
    st = submit_status(ctx, "neg", x.strided((10,), (-1,), 9), [x])
    expect(ctx, st, E.ERR_ALIASING, "neg: output the reverse of the input")
    st = submit_status(ctx, "matmul", y, [y, f32(ctx, (4, 4))])
    expect(ctx, st, E.ERR_ALIASING, "matmul: output is input a (not an in-place op)")
    st = submit_status(ctx, "sum", y.slice(0, 0, 1).reshape((4,)), [y], axes=0b01)
    expect(ctx, st, E.ERR_ALIASING, "sum over axis 0 into the input's first row")
    st = submit_status(ctx, "softmax", y.slice(1, 0, 2), [y.slice(1, 1, 3)], axis=-1)
    expect(ctx, st, E.ERR_ALIASING, "softmax: output and input overlap by one column")
    w = f32(ctx, (4,))
    st = submit_status(ctx, "layernorm", y.slice(0, 0, 1), [y.slice(0, 1, 2), w, None], scalar=(1e-5, 0))
    assert st == OK, "layernorm on disjoint rows of one tensor: %s %s" % (status_name(st), ctx.last_error())
    st = submit_status(ctx, "rmsnorm", y.slice(0, 0, 1), [y.slice(0, 1, 2), y.slice(0, 0, 1).reshape((4,))],
                       scalar=(1e-5, 0))
    expect(ctx, st, E.ERR_ALIASING, "rmsnorm: output is the weight")
    # in place is allowed for element-wise ops: the very same view
    st = submit_status(ctx, "add", x, [x, x])
    assert st == OK, "add in place: %s %s" % (status_name(st), ctx.last_error())


@pytest.mark.parametrize("op", ["matmul", "sum", "argmax", "var"])
def test_non_inplace_ops_refuse_same_view(ctx, op):
    y = f32(ctx, (4, 4))
    if op == "matmul":
        st = submit_status(ctx, op, y, [y, y])
    else:
        odt = "i64" if op == "argmax" else "f32"
        t = ctx.new(odt, (4, 4))
        st = submit_status(ctx, op, t, [t], axes=0, keepdim=1)   # no axis reduced: same shape
    expect(ctx, st, E.ERR_ALIASING, "%s with the output the same view as the input" % op)


def test_unknown_op(ctx):
    a, out = f32(ctx, (4,)), ctx.new("f32", (4,))
    for op in (OP_COUNT, 1000):
        st = submit_status(ctx, op, out, [a, a])
        expect(ctx, st, E.ERR_UNKNOWN_OP, "op %d" % op)


def test_axis_out_of_range(ctx):
    x = f32(ctx, (3, 4))
    for mask in (0b100, 1 << 8, 1 << 31, 0b111):
        st = submit_status(ctx, "sum", ctx.new("f32", ()), [x], axes=mask)
        expect(ctx, st, E.ERR_AXIS, "sum of a rank-2 tensor, axes mask %#x" % mask)
    st = submit_status(ctx, "sum", ctx.new("f32", ()), [f32(ctx, ())], axes=0b1)
    expect(ctx, st, E.ERR_AXIS, "sum of a 0-d tensor over axis 0")
    for op in ("softmax", "log_softmax"):
        for axis in (2, -3, 100):
            st = submit_status(ctx, op, ctx.new("f32", (3, 4)), [x], axis=axis)
            expect(ctx, st, E.ERR_AXIS, "%s axis %d of a rank-2 tensor" % (op, axis))
    for what, res in [("slice axis 2", x.slice_raw(2, 0, 1, 1)), ("slice axis -3", x.slice_raw(-3, 0, 1, 1)),
                      ("transpose 0, 2", x.transpose_raw(0, 2)), ("squeeze axis 5", x.squeeze_raw(5)),
                      ("unsqueeze axis 4", x.unsqueeze_raw(4)), ("unsqueeze axis -5", x.unsqueeze_raw(-5))]:
        expect(ctx, res[0], E.ERR_AXIS, "view: %s of a rank-2 tensor" % what)


def test_axes_list_errors_name_the_axis(ctx):
    """The convenience functions take a list of axes: a bad one is refused naming it."""
    L = lib()
    x = f32(ctx, (3, 4))
    out = ctx.new("f32", ())
    for axes, words in [([5], "axes[0] is 5, out of range for an input of rank 2 (-2..1)"),
                        ([0, -3], "axes[1] is -3, out of range"), ([0, 0], "axes[1] is 0, an axis named twice"),
                        ([1, -1], "axes[1] is -1, an axis named twice")]:
        arr = (ctypes.c_int * len(axes))(*axes)
        st = L.gpuos_sum(ctx.ptr, out.ptr, x.ptr, arr, len(axes), 0)
        expect(ctx, st, E.ERR_AXIS, "gpuos_sum axes %s" % axes)
        assert words in ctx.last_error() and "gpuos_sum" in ctx.last_error(), ctx.last_error()
    arr = (ctypes.c_int * 1)(0)
    st = L.gpuos_sum(ctx.ptr, out.ptr, x.ptr, arr, -1, 0)
    expect(ctx, st, E.ERR_AXIS, "gpuos_sum n_axes -1")
    arr = (ctypes.c_int * 2)(-1, 0)
    assert L.gpuos_sum(ctx.ptr, out.ptr, x.ptr, arr, 2, 0) == OK, ctx.last_error()
    assert np.isclose(ctx.download(out), ctx.download(x).sum(dtype=np.float64), rtol=1e-5)
    usable(ctx)


def test_reshape_not_viewable(ctx):
    x = f32(ctx, (3, 4))
    st, _ = x.transpose(0, 1).reshape_raw((12,))
    expect(ctx, st, E.ERR_NOT_VIEWABLE, "reshape of a transpose to (12,)")
    st, _ = x.slice(1, 0, 3).reshape_raw((9,))
    expect(ctx, st, E.ERR_NOT_VIEWABLE, "reshape of x[:, 0:3] to (9,)")
    st, _ = x.slice(1, 0, 4, 2).reshape_raw((6,))   # strides (4, 2): one stride of 2 expresses it
    assert st == OK, "reshape of x[:, ::2] to (6,): %s" % status_name(st)
    st, v = x.slice(0, 0, 2).reshape_raw((8,))   # rows 0..1 stay contiguous: a view
    assert st == OK, "reshape of x[0:2] to (8,): %s" % status_name(st)


def test_slice_step_zero(ctx):
    st, _ = f32(ctx, (5,)).slice_raw(0, 0, 5, 0)
    expect(ctx, st, E.ERR_INVALID_ARGUMENT, "slice with step 0")


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_empty_extremum(ctx, op):
    odt = "i64" if op.startswith("arg") else "f32"
    x = ctx.new("f32", (3, 0))
    st = submit_status(ctx, op, ctx.new(odt, (3,)), [x], axes=0b10)
    expect(ctx, st, E.ERR_INVALID_ARGUMENT, "%s over zero elements" % op)
    st = submit_status(ctx, op, ctx.new(odt, ()), [ctx.new("f32", (0,))])
    expect(ctx, st, E.ERR_INVALID_ARGUMENT, "%s of an empty vector" % op)


def test_upload_download_wrong_size(ctx):
    """bytes != numel * dtype size: GPUOS_ERR_OUT_OF_BOUNDS (docs/OPERATORS.md), nothing copied."""
    before = np.arange(4, dtype=np.float32)
    t = ctx.tensor(before, "f32")
    buf = np.full(8, 7.0, dtype=np.float32)
    L = lib()
    for n in (15, 17, 0, 32, 4):
        st = L.gpuos_upload(ctx.ptr, t.ptr, buf.ctypes.data, n)
        expect(ctx, st, E.ERR_OUT_OF_BOUNDS, "gpuos_upload of %d bytes into 16" % n)
        st = L.gpuos_download(ctx.ptr, t.ptr, buf.ctypes.data, n)
        expect(ctx, st, E.ERR_OUT_OF_BOUNDS, "gpuos_download of %d bytes from 16" % n)
    assert np.array_equal(ctx.download(t), before), "a refused upload changed the tensor"
    assert np.array_equal(buf, np.full(8, 7.0, dtype=np.float32)), "a refused download wrote the buffer"


# ---------------------------------------------------------------- configuration
def _create(**fields):
    L = lib()
    cfg = config_init()
    cfg.device = G.default_device()
    for k, v in fields.items():
        setattr(cfg, k, v)
    p = ctypes.c_void_p(12345)
    st = L.gpuos_create(ctypes.byref(cfg), ctypes.byref(p))
    return st, p


@pytest.mark.parametrize("fields,what", [
    (dict(struct_size=ctypes.sizeof(Config) - 8), "struct_size too small"),
    (dict(struct_size=0), "struct_size 0"),
    (dict(struct_size=ctypes.sizeof(Config) + 64), "struct_size of an unknown larger version"),
    (dict(api_version=99 * 10000), "api_version of an unknown major version"),
    (dict(queue_capacity=100), "queue_capacity not a power of two"),
    (dict(queue_capacity=8), "queue_capacity below 16"),
    (dict(queue_capacity=0), "queue_capacity 0"),
    (dict(queue_capacity=1 << 25), "queue_capacity above 1 << 24"),
    (dict(queue_capacity=4095), "queue_capacity 4095"),
    (dict(host_threads=-1), "host_threads negative"),
])
def test_bad_config(fields, what):
    st, p = _create(**fields)
    L = lib()
    assert st == E.ERR_BAD_CONFIG, "%s: %s, expected GPUOS_ERR_BAD_CONFIG" % (what, status_name(st))
    assert not p.value, "%s: *out is not NULL after a failed gpuos_create" % what
    msg = (L.gpuos_last_error(None) or b"").decode(errors="replace")
    assert msg != "", "%s: gpuos_last_error(NULL) is empty" % what
    assert names_status(msg, st), "%s: gpuos_last_error(NULL) %r does not start with %s" % (what, msg, status_name(st))
    with Context() as c:   # creating contexts still works
        usable(c)


def test_no_such_device():
    st, p = _create(device=1000)
    assert st == E.ERR_NO_DEVICE, "device 1000: %s" % status_name(st)
    assert not p.value
    msg = (lib().gpuos_last_error(None) or b"").decode(errors="replace")
    assert names_status(msg, st), "gpuos_last_error(NULL) %r does not start with %s" % (msg, status_name(st))


def test_config_limits_accepted():
    for cap in (16, 32, 1 << 16):
        st, p = _create(queue_capacity=cap)
        assert st == OK, "queue_capacity %d refused: %s %s" % (cap, status_name(st), lib().gpuos_last_error(None))
        lib().gpuos_destroy(p)


# ---------------------------------------------------------------- strings
def test_status_strings():
    L = lib()
    seen = set()
    for code, name in enumerate(STATUS):
        s = L.gpuos_status_string(code)
        assert s is not None, "gpuos_status_string(%d) is NULL" % code
        s = s.decode()
        assert s.startswith(name), "gpuos_status_string(%d) = %r does not start with %s" % (code, s, name)
        assert len(s) > len(name) + 2, "gpuos_status_string(%d) = %r has no description" % (code, s)
        seen.add(s)
    assert len(seen) == len(STATUS)
    for code in (len(STATUS), 1000, -1):
        assert L.gpuos_status_string(code) is not None, "gpuos_status_string(%d) is NULL" % code


def test_last_error_empty_on_fresh_context():
    with Context() as c:
        assert c.last_error() == ""
        assert c.status() == OK


# ---------------------------------------------------------------- other calls' documented codes
def test_other_calls_documented_codes(ctx):
    """docs/OPERATORS.md ("Other calls", "Errors at submission"): squeeze of an axis whose size is
    not 1, permute with a repeated axis, a task of the wrong struct_size, an input beyond the op's
    inputs, waiting on a sequence number never issued: GPUOS_ERR_INVALID_ARGUMENT; rank below 0:
    GPUOS_ERR_RANK."""
    L = lib()
    x = f32(ctx, (3, 4))
    st, v = x.squeeze_raw(0)
    expect(ctx, st, E.ERR_INVALID_ARGUMENT, "squeeze of an axis of size 3")
    assert v is None
    expect(ctx, x.squeeze_raw(-1)[0], E.ERR_INVALID_ARGUMENT, "squeeze of an axis of size 4")
    expect(ctx, x.permute_raw([0, 0])[0], E.ERR_INVALID_ARGUMENT, "permute [0, 0]")
    expect(ctx, f32(ctx, (2, 3, 4)).permute_raw([2, 0, 2])[0], E.ERR_INVALID_ARGUMENT, "permute [2, 0, 2]")
    for size in (8, 0, ctypes.sizeof(Task) + 8):
        tk = ctx.task("neg", ctx.new("f32", (3, 4)), [x])
        tk.struct_size = size
        fence = ctx.fence()
        st = ctx.submit_task(tk)[0]
        assert ctx.fence() == fence, "a task of struct_size %d was queued" % size
        expect(ctx, st, E.ERR_INVALID_ARGUMENT, "task struct_size %d" % size)
    expect(ctx, submit_status(ctx, "neg", ctx.new("f32", (3, 4)), [x, x]), E.ERR_INVALID_ARGUMENT,
           "neg with a second input")
    expect(ctx, submit_status(ctx, "add", ctx.new("f32", (3, 4)), [x, x, x]), E.ERR_INVALID_ARGUMENT,
           "add with a third input")
    expect(ctx, submit_status(ctx, "rmsnorm", ctx.new("f32", (3, 4)), [x, None, f32(ctx, (4,))], scalar=(1e-5, 0)),
           E.ERR_INVALID_ARGUMENT, "rmsnorm with a third input")
    expect(ctx, ctx.wait_fence(ctx.fence() + 1000, 10), E.ERR_INVALID_ARGUMENT, "wait_fence beyond gpuos_fence")
    expect(ctx, ctx.wait_task(ctx.fence() + 1000, 10), E.ERR_INVALID_ARGUMENT, "wait_task beyond gpuos_fence")
    p = ctypes.c_void_p()
    for rank in (-1, -100):
        expect(ctx, L.gpuos_tensor_new(ctx.ptr, 8, rank, _i64arr([1]), ctypes.byref(p)), E.ERR_RANK,
               "tensor_new rank %d" % rank)
        assert not p.value, "*out set on failure"
    buf = np.zeros(4, dtype=np.float32)
    st = L.gpuos_tensor_wrap(ctx.ptr, buf.ctypes.data, buf.nbytes, 8, -1, _i64arr([1]), None, ctypes.byref(p))
    expect(ctx, st, E.ERR_RANK, "gpuos_tensor_wrap rank -1")


def test_wrap_unaligned(ctx):
    """gpuos_tensor_wrap of memory not aligned to the dtype's size: GPUOS_ERR_INVALID_ARGUMENT
    (docs/OPERATORS.md); 1-byte dtypes have no alignment to miss."""
    raw = np.zeros(256, dtype=np.uint8)
    base = (-raw.ctypes.data) % 64          # an offset of raw aligned to 64 bytes
    for dt in [d for d in DTYPES if G.ITEMSIZE[d] > 1]:
        size = G.ITEMSIZE[dt]
        for mis in sorted({1, size // 2, size - 1}):
            mem = raw[base + mis:base + mis + 8 * size]
            st, t = ctx.wrap_raw(mem, dt, (8,))
            expect(ctx, st, E.ERR_INVALID_ARGUMENT, "gpuos_tensor_wrap of %s at an address %d bytes past %d-byte "
                                                    "alignment" % (dt, mis, size))
            assert t is None
        st, t = ctx.wrap_raw(raw[base + size:base + 9 * size], dt, (8,))
        assert st == OK, "gpuos_tensor_wrap of %s at an aligned address: %s %s" % (dt, status_name(st),
                                                                                   ctx.last_error())
        t.release()
    for dt in [d for d in DTYPES if G.ITEMSIZE[d] == 1]:
        st, t = ctx.wrap_raw(raw[base + 3:base + 11], dt, (8,))
        assert st == OK, "gpuos_tensor_wrap of %s at an odd address: %s %s" % (dt, status_name(st), ctx.last_error())
        t.release()
    usable(ctx)


EXACT_OVERLAP_LIMIT = 1 << 22


def test_output_not_nested_above_2_22(ctx):
    """docs/OPERATORS.md: an output overlapping itself is GPUOS_ERR_BAD_STRIDES, and above 2^22
    elements so are strides that do not nest (one that may overlap itself, unproven). Strides
    (8, 3, 2) over (M, 2, 3) do not nest (the axis of stride 3 starts inside the 0..4 the axis of
    stride 2 spans) but never overlap ({0, 2, 4} + {0, 3} are 6 distinct offsets, below 8): at
    6M <= 2^22 elements the output is accepted and written exactly, above 2^22 refused; a nested
    view of more than 2^22 elements is accepted."""
    for m, ok in ((7, True), (EXACT_OVERLAP_LIMIT // 6, True), (EXACT_OVERLAP_LIMIT // 6 + 1, False)):
        base = ctx.tensor(np.zeros(8 * m, dtype=np.uint8), "u8")
        view = base.strided((m, 2, 3), (8, 3, 2), 0)
        assert view.info().numel == 6 * m and (6 * m <= EXACT_OVERLAP_LIMIT) == ok
        st = submit_status(ctx, "fill", view, [], scalar=(1.0, 0.0))
        if not ok:
            expect(ctx, st, E.ERR_BAD_STRIDES, "fill of %d elements, strides (8, 3, 2) over (%d, 2, 3)" % (6 * m, m))
            assert not ctx.download(base).any(), "a refused fill wrote memory"
            continue
        assert st == OK, "fill of %d elements, strides (8, 3, 2) over (%d, 2, 3) (they never overlap): %s %s" % (
            6 * m, m, status_name(st), ctx.last_error())
        want = np.zeros((m, 8), dtype=np.uint8)
        want[:, [0, 2, 3, 4, 5, 7]] = 1
        assert np.array_equal(ctx.download(base).reshape(m, 8), want.reshape(m, 8)), "fill wrote the wrong elements"
    # the same number of elements with nested strides (a row of 6 of every 8): accepted
    m = EXACT_OVERLAP_LIMIT // 6 + 1
    base = ctx.tensor(np.zeros(8 * m, dtype=np.uint8), "u8")
    st = submit_status(ctx, "fill", base.strided((m, 2, 3), (8, 3, 1), 0), [], scalar=(1.0, 0.0))
    assert st == OK, "fill of %d elements with nested strides (8, 3, 1): %s %s" % (6 * m, status_name(st),
                                                                                   ctx.last_error())
    got = ctx.download(base).reshape(m, 8)
    assert got[:, :6].all() and not got[:, 6:].any()
    # an overlap proven below the limit is refused too: strides (2, 1) over (3, 3) reach offset 2 twice
    st = submit_status(ctx, "fill", ctx.new("u8", (64,)).strided((3, 3), (2, 1), 0), [], scalar=(1.0, 0.0))
    expect(ctx, st, E.ERR_BAD_STRIDES, "fill into strides (2, 1) over (3, 3)")


def test_upload_view_rules_as_tasks(ctx):
    """gpuos.h: an upload refuses a view that writes an element several times as a task's output
    does, including above 2^20 elements (it accepted an overlap it had not checked there) and the
    2^22 rule for strides that do not nest."""
    L = lib()
    n = 1 << 20
    base = ctx.tensor(np.zeros(n + 2, dtype=np.uint8), "u8")
    view = base.strided((2, n), (1, 1), 0)  # element (i, j) at i + j: overlaps, 2M elements
    src = np.ones(2 * n, dtype=np.uint8)
    st = L.gpuos_upload(ctx.ptr, view.ptr, src.ctypes.data, src.nbytes)
    expect(ctx, st, E.ERR_BAD_STRIDES, "upload into strides (1, 1) over (2, 2^20)")
    assert not ctx.download(base).any(), "a refused upload wrote memory"
    for m, ok in ((EXACT_OVERLAP_LIMIT // 6, True), (EXACT_OVERLAP_LIMIT // 6 + 1, False)):
        base = ctx.tensor(np.zeros(8 * m, dtype=np.uint8), "u8")
        view = base.strided((m, 2, 3), (8, 3, 2), 0)  # never overlaps; the axes do not nest
        src = np.ones(6 * m, dtype=np.uint8)
        st = L.gpuos_upload(ctx.ptr, view.ptr, src.ctypes.data, src.nbytes)
        if not ok:
            expect(ctx, st, E.ERR_BAD_STRIDES, "upload of %d elements, strides (8, 3, 2)" % (6 * m))
            assert not ctx.download(base).any(), "a refused upload wrote memory"
            continue
        assert st == OK, "upload of %d elements, strides (8, 3, 2) (they never overlap): %s %s" % (
            6 * m, status_name(st), ctx.last_error())
        want = np.zeros((m, 8), dtype=np.uint8)
        want[:, [0, 2, 3, 4, 5, 7]] = 1
        assert np.array_equal(ctx.download(base).reshape(m, 8), want), "upload wrote the wrong elements"
    usable(ctx)


# ---------------------------------------------------------------- refused, whatever the code
def test_other_bad_arguments_refused(ctx):
    """Bad arguments whose status docs/OPERATORS.md and gpuos.h leave open are refused, say why
    (the message names the status returned), and leave the context usable: a reshape to another
    number of elements or with two -1, a broadcast to an incompatible shape, dtype GPUOS_DTYPE_COUNT, a negative
    size."""
    L = lib()
    x = f32(ctx, (3, 4))
    p = ctypes.c_void_p()
    cases = [("reshape to 13 elements", lambda: x.reshape_raw((13,))[0]),
             ("reshape with two -1", lambda: x.reshape_raw((-1, -1))[0]),
             ("broadcast_to (3, 5)", lambda: x.broadcast_to_raw((3, 5))[0]),
             ("tensor_new of dtype GPUOS_DTYPE_COUNT (%d)" % G.DTYPE_COUNT,
              lambda: L.gpuos_tensor_new(ctx.ptr, G.DTYPE_COUNT, 1, _i64arr([1]), ctypes.byref(p))),
             ("tensor_new of a negative size",
              lambda: L.gpuos_tensor_new(ctx.ptr, 8, 1, _i64arr([-2]), ctypes.byref(p)))]
    for what, call in cases:
        st = call()
        assert st != OK, "%s accepted" % what
        msg = ctx.last_error()
        assert msg != "", "%s: %s with an empty gpuos_last_error" % (what, status_name(st))
        assert names_status(msg, st), "%s: gpuos_last_error %r does not start with %s" % (what, msg, status_name(st))
    usable(ctx)
