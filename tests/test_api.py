"""The API around the operators: names and ids, what the build supports, tensor info, views against
NumPy's own views, upload and download of any view, wrapped memory, and every generated convenience
function against the same task through gpuos_submit."""
import ctypes

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import harness as H
import reference as R
from gpuos_ctypes import (BACKEND_HOST, DTYPES, ITEMSIZE, OK, OP_COUNT, OPS, SLICE_END, Config, TensorInfo, Task,
                          header_version, lib, status_name, view_indices)
from opspec import SPEC_OPS, combos, load_manifest


def test_every_public_function_exported():
    L = lib()
    missing = L.missing + [n for n, params in L.convenience.items() if params is None]
    assert not missing, "not exported (or not bindable): %s" % missing


def test_debug_compile_times(ctx):
    """NULL and the host executor compiled nothing: every figure 0. On a GPU: the programs the
    device code was split into, and times that are all 0 (from the disk cache) or all set, the
    slowest program within the compile. NULL outputs are allowed."""
    from ctypes import byref, c_double, c_int
    from gpuos_ctypes import BACKEND_CUDA
    L = lib()
    n, cm, sm, lm = c_int(-1), c_double(-1), c_double(-1), c_double(-1)
    L.gpuos_debug_compile_times(None, byref(n), byref(cm), byref(sm), byref(lm))
    assert (n.value, cm.value, sm.value, lm.value) == (0, 0.0, 0.0, 0.0)
    L.gpuos_debug_compile_times(ctx.ptr, byref(n), byref(cm), byref(sm), byref(lm))
    if ctx.backend() != BACKEND_CUDA:
        assert (n.value, cm.value, sm.value, lm.value) == (0, 0.0, 0.0, 0.0)
    else:
        assert 0 <= n.value <= 8
        assert (cm.value == 0) == (sm.value == 0) and 0 <= sm.value <= cm.value and lm.value >= 0
    L.gpuos_debug_compile_times(ctx.ptr, None, None, None, None)


def test_version():
    assert lib().gpuos_version() == header_version()


def test_struct_layouts_lp64():
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        pytest.skip("layout numbers are for LP64")
    assert ctypes.sizeof(Task) == 96 and ctypes.sizeof(Config) == 48 and ctypes.sizeof(TensorInfo) == 160


def test_names_and_ids():
    L = lib()
    for i, name in enumerate(OPS):
        assert L.gpuos_op_name(i).decode() == name
        assert L.gpuos_op_from_name(name.encode()) == i
        assert SPEC_OPS[name].id == i, "docs/OPERATORS.md gives %s the id %d" % (name, SPEC_OPS[name].id)
    assert L.gpuos_op_name(OP_COUNT) is None and L.gpuos_op_name(-1) is None
    assert L.gpuos_op_from_name(b"nope") == OP_COUNT and L.gpuos_op_from_name(None) == OP_COUNT
    for i, name in enumerate(DTYPES):
        assert L.gpuos_dtype_name(i).decode() == name
        assert L.gpuos_dtype_size(i) == ITEMSIZE[name]
    assert L.gpuos_dtype_name(len(DTYPES)) is None and L.gpuos_dtype_size(len(DTYPES)) == 0


def test_manifest_matches_spec_and_library():
    """The manifest lists exactly what gpuos_op_supported says, within the spec's dtype sets."""
    m = load_manifest()
    if m is None:
        pytest.fail("tests/generated/manifest.json is missing: run `make gen`")
    L = lib()
    listed = set(combos())
    for op, dt, r in listed:
        assert dt in SPEC_OPS[op].dtypes, "manifest lists %s on %s, outside its dtype set" % (op, dt)
    for op in OPS:
        for i, dt in enumerate(DTYPES):
            for r in range(10):
                got = L.gpuos_op_supported(OP_ID(op), i, r)
                assert got == ((op, dt, r) in listed), "gpuos_op_supported(%s, %s, %d) = %d" % (op, dt, r, got)
    assert L.gpuos_op_supported(OP_COUNT, 8, 1) == 0 and L.gpuos_op_supported(0, len(DTYPES), 1) == 0


def OP_ID(op):
    return OPS.index(op)


def test_full_build_covers_the_spec():
    """With every dtype and rank generated (the default `make gen`), every op of the spec is there
    for every dtype of its set and every rank from its minimum rank up to 8."""
    m = load_manifest()
    if m is None or m.get("generated_dtypes") != DTYPES or m.get("ranks") != list(range(9)):
        pytest.skip("a partial build (make gen DTYPES=... RANKS=...)")
    listed = set(combos())
    min_rank = {o["name"]: o.get("min_rank", 0) for o in m["ops"]}
    missing = [(op, dt, r) for op, s in SPEC_OPS.items() for dt in s.dtypes for r in range(min_rank[op], 9)
               if (op, dt, r) not in listed]
    assert not missing, "not generated: %s" % missing[:20]
    assert {op: min_rank[op] for op in min_rank if min_rank[op]} == {
        "matmul": 1, "softmax": 1, "log_softmax": 1, "layernorm": 1, "rmsnorm": 1}


# ---------------------------------------------------------------- tensors and info
def test_tensor_info(ctx):
    t = ctx.new("bf16", (2, 3, 4))
    i = t.info()
    assert (i.dtype, i.rank, i.shape, i.strides, i.offset, i.numel, i.contiguous, i.owned) == \
        ("bf16", 3, (2, 3, 4), (12, 4, 1), 0, 24, 1, 1)
    v = t.slice(1, 1, 3).transpose(0, 2)
    i = v.info()
    assert (i.shape, i.strides, i.offset, i.numel, i.contiguous, i.owned) == ((4, 2, 2), (1, 4, 12), 4, 16, 0, 1)
    s = ctx.scalar("i16", -7.9)
    i = s.info()
    assert (i.rank, i.shape, i.numel, i.contiguous) == (0, (), 1, 1)
    assert int(ctx.download(s)) == -7
    e = ctx.new("f32", (3, 0, 2))
    assert e.info().numel == 0
    # zero-size, the other sizes' product past 2^63: strides stop growing (they reach no
    # element) instead of overflowing
    for z in (ctx.new("f32", (1 << 62, 0, 4)), ctx.new("f32", (0,)).reshape((8, 0, 1 << 62, 1 << 40))):
        i = z.info()
        assert i.numel == 0 and all(0 < s < (1 << 63) for s in i.strides), i.strides
    if ctx.backend() == BACKEND_HOST:
        buf = np.zeros(12, dtype=np.float32)
        w = ctx.wrap(buf, "f32", (3, 4))
        assert (w.info().owned, w.info().contiguous, w.info().strides) == (0, 1, (4, 1))


SHAPE = (3, 4, 5)


def views_of(t, a):
    """(name, gpuos view, the NumPy view of a that it must equal)."""
    n = SHAPE[2]
    yield "slice 1:3", t.slice(0, 1, 3), a[1:3]
    yield "slice ::2 axis 2", t.slice(2, 0, SLICE_END, 2), a[:, :, ::2]
    yield "slice -1 axis", t.slice(-1, 1, 4), a[..., 1:4]
    yield "slice ::-1", t.slice(1, SLICE_END, SLICE_END, -1), a[:, ::-1]
    yield "slice 3::-2", t.slice(2, 3, SLICE_END, -2), a[:, :, 3::-2]
    yield "slice -2:-5:-1", t.slice(2, -2, -5, -1), a[:, :, -2:-5:-1]
    yield "slice clamped", t.slice(0, -100, 100), a[-100:100]
    yield "slice empty", t.slice(1, 3, 1), a[:, 3:1]
    yield "slice start past end", t.slice(2, 7, SLICE_END, -1), a[:, :, 7::-1]
    yield "slice of slice", t.slice(2, 1, n).slice(2, SLICE_END, SLICE_END, -2), a[:, :, 1:][:, :, ::-2]
    yield "permute", t.permute([2, 0, 1]), a.transpose(2, 0, 1)
    yield "transpose", t.transpose(0, -1), a.swapaxes(0, 2)
    yield "reshape", t.reshape((4, 15)), a.reshape(4, 15)
    yield "reshape -1", t.reshape((-1, 5)), a.reshape(-1, 5)
    yield "reshape of a slice", t.slice(0, 1, 3).reshape((40,)), a[1:3].reshape(40)
    yield "reshape keeps strides", t.slice(2, 0, SLICE_END, 2).reshape((12, 3)), a[:, :, ::2].reshape(12, 3)
    yield "unsqueeze 0", t.unsqueeze(0), a[None]
    yield "unsqueeze -1", t.unsqueeze(-1), a[..., None]
    yield "unsqueeze 2", t.unsqueeze(2), a[:, :, None]
    yield "squeeze", t.slice(0, 1, 2).squeeze(0), a[1]
    yield "broadcast_to", t.slice(0, 0, 1).broadcast_to((2, 3, 4, 5)), np.broadcast_to(a[0:1], (2, 3, 4, 5))
    flat, isz = a.reshape(-1), a.itemsize
    yield "strided", t.strided((2, 3), (7, -2), 30), as_strided(flat[30:], (2, 3), (7 * isz, -2 * isz))
    yield "strided of a view", t.slice(0, 1, 3).strided((5,), (12,), 2), as_strided(flat[2:], (5,), (12 * isz,))


def test_views_match_numpy(ctx, rng):
    a = rng.standard_normal(SHAPE)
    t = ctx.tensor(a, "f64")
    bad = []
    for name, v, ref in views_of(t, a):
        got = ctx.download(v)
        i = v.info()
        if got.shape != ref.shape:
            bad.append("%s: shape %s, NumPy %s (strides %s offset %d)" % (name, got.shape, ref.shape, i.strides,
                                                                        i.offset))
        elif not np.array_equal(got, ref):
            bad.append("%s: values differ from NumPy's view" % name)
        elif i.numel != ref.size:
            bad.append("%s: numel %d, NumPy size %d" % (name, i.numel, ref.size))
        elif ref.size > 1 and 1 not in ref.shape and i.contiguous != int(ref.flags.c_contiguous):
            bad.append("%s: contiguous = %d" % (name, i.contiguous))
    assert not bad, "\n".join(bad)


def test_upload_into_views(ctx, rng):
    """Upload writes exactly the view's elements (in logical order); the rest of the memory stays."""
    a = rng.standard_normal(SHAPE)
    names = [n for n, _, _ in views_of(ctx.tensor(a, "f64"), a) if n != "broadcast_to"]
    bad = []
    for name in names:
        t = ctx.tensor(a, "f64")
        v = dict((n, x) for n, x, _ in views_of(t, a))[name]
        ref = a.copy()
        npv = dict((n, y) for n, _, y in views_of(t, ref))[name]
        newvals = rng.standard_normal(npv.shape)
        try:
            ctx.upload(v, newvals)
        except Exception as e:
            bad.append("%s: %s" % (name, e))
            continue
        npv[...] = newvals
        if not np.array_equal(ctx.download(t), ref):
            bad.append("upload into view %s wrote the wrong elements" % name)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_upload_download_roundtrip(ctx, rng, dtype):
    for layout in ("contig",) + tuple(H.LAYOUTS):
        vals = H.random_storage(rng, dtype, 60).reshape(3, 4, 5)
        o = H.make_operand(ctx, rng, dtype, vals, layout)
        got = ctx.download(o.tensor)
        assert H.bits_equal(got, vals), "%s %s download" % (dtype, layout)
        new = H.random_storage(rng, dtype, 60).reshape(3, 4, 5)
        ctx.upload(o.tensor, new)
        base = ctx.download(o.base_tensor).reshape(-1)
        expect = o.base.copy()
        expect[o.idx.reshape(-1)] = new.reshape(-1)
        assert H.bits_equal(base, expect), "%s %s upload" % (dtype, layout)


@pytest.mark.parametrize("dtype", ["u8", "f16", "f32", "f64"])
@pytest.mark.parametrize("shape", [(130, 300), (3, 40, 129), (2, 3, 17, 200)])
def test_upload_download_large_views(ctx, rng, dtype, shape):
    """Views with at least 128 columns: transposed ones (rows closer than columns) are copied
    in tiles on the host executor; every layout round-trips bit for bit."""
    n = int(np.prod(shape))
    for layout in ("permuted", "negative", "mixed", "strided"):
        vals = H.random_storage(rng, dtype, n).reshape(shape)
        o = H.make_operand(ctx, rng, dtype, vals, layout)
        assert H.bits_equal(ctx.download(o.tensor), vals), "%s %s %s download" % (dtype, shape, layout)
        new = H.random_storage(rng, dtype, n).reshape(shape)
        ctx.upload(o.tensor, new)
        expect = o.base.copy()
        expect[o.idx.reshape(-1)] = new.reshape(-1)
        assert H.bits_equal(ctx.download(o.base_tensor).reshape(-1), expect), "%s %s %s upload" % (dtype, shape, layout)


def test_wrapped_memory(ctx):
    """Ops on wrapped host memory read and write the caller's array (host executor only)."""
    if ctx.backend() != BACKEND_HOST:
        pytest.skip("wrap of host memory: host executor only")
    src = np.arange(24, dtype=np.int32).reshape(4, 6)
    dst = np.full(40, -1, dtype=np.int32)
    a = ctx.wrap(src, "i32", (4, 6))
    at = ctx.wrap(src, "i32", (6, 4), (1, 6))                 # a transposed view of the same memory
    o = ctx.wrap(dst, "i32", (6, 4), (1, 8))                  # column-major with gaps
    ctx.submit("neg", o, [at])
    assert ctx.wait(10000) == OK
    expect = np.full(40, -1, dtype=np.int32)
    expect[view_indices((6, 4), (1, 8), 0).reshape(-1)] = -src.T.reshape(-1)
    assert np.array_equal(dst, expect)
    r = np.zeros(6, dtype=np.int32)
    ctx.submit("sum", ctx.wrap(r, "i32", (6,)), [a], axes=0b01)
    assert ctx.wait(10000) == OK
    assert np.array_equal(r, src.sum(axis=0))


def test_wrap_negative_strides_inside(ctx):
    """A wrapped view whose strides are negative is refused if it reaches before data (see
    test_errors); one that stays inside (a zero stride) is accepted."""
    if ctx.backend() != BACKEND_HOST:
        pytest.skip("host executor only")
    buf = np.arange(4, dtype=np.float32)
    t = ctx.wrap(buf, "f32", (3, 4), (0, 1))
    assert np.array_equal(ctx.download(t), np.broadcast_to(buf, (3, 4)))


# ---------------------------------------------------------------- convenience functions
def _conv_case(ctx, rng, op):
    """A small case of op: (dtype, [input storage], out dtype, out shape, task kwargs, convenience
    extra args, reference storage, tolerance kwargs for harness.check)."""
    import test_ops as T
    spec = SPEC_OPS[op]
    dt = "f32" if "f32" in spec.dtypes else "i32" if "i32" in spec.dtypes else "bool"
    odt = R.out_dtype_of(op, dt, spec.out)
    sec = spec.section
    gen = lambda shape, d=dt, role=0: H.gen_values(rng, op, d, role, shape)
    tol = lambda n=None: dict(zip(("rtol", "atol"), T.tol(op, odt, n)))
    if op == "cast":
        x = gen((3, 4))
        return dt, [x], "f64", (3, 4), {}, [], R.cast(x, dt, "f64"), {}
    if op in ("fill", "arange"):
        sc = (2.5, 0.0) if op == "fill" else (-3.0, 0.5)
        ref, _ = R.elementwise(op, dt, [], dt, sc, (3, 4))
        return dt, [], dt, (3, 4), dict(scalar=sc), list(sc[:1] if op == "fill" else sc), ref, tol()
    if sec.startswith("Reductions"):
        x = gen((3, 4, 2))
        axes = (ctypes.c_int * 2)(-1, 0)
        kw = dict(axes=0b101, keepdim=1)
        extra = [axes, 2, 1]
        corr = 0
        if op in ("var", "std"):
            corr = kw["correction"] = 1
            extra.append(1)
        ref, scale, n = R.reduce(op, dt, x, (0, 2), 1, corr)
        t = tol(n)
        t.update(scale=scale, acc=T.acc_tol(op, odt, n))
        return dt, [x], odt, (1, 4, 1), kw, extra, ref, t
    if op == "matmul":
        a, b = gen((3, 4)), gen((4, 2), role=1)
        ref, scale, k = R.matmul(dt, a, b)
        t = tol(k)
        t.update(scale=scale, acc=T.acc_tol(op, dt, k))
        return dt, [a, b], dt, (3, 2), {}, [], ref, t
    if op in ("softmax", "log_softmax"):
        x = gen((3, 4))
        ref, scale = R.softmax(op, dt, x, -2)
        return dt, [x], dt, (3, 4), dict(axis=-2), [-2], ref, dict(tol(3), scale=scale)
    if op in ("layernorm", "rmsnorm"):
        x, w, b = gen((3, 4)), gen((4,), role=1), gen((4,), role=2)
        if op == "layernorm":
            ref, scale, n = R.layernorm(dt, x, w, b, 0.01)
            ins = [x, w, b]
        else:
            ref, scale, n = R.rmsnorm(dt, x, w, 0.01)
            ins = [x, w]
        return dt, ins, dt, (3, 4), dict(scalar=(0.01, 0)), [0.01], ref, dict(tol(n), scale=scale)
    n = 2 if sec.startswith("Binary") else 3 if sec.startswith("Ternary") else 1
    ins = [gen((3, 4), "bool" if op == "where" and i == 0 else dt, i) for i in range(n)]
    ref, scale = R.elementwise(op, dt, ins, odt, (0.0, 0.0), (3, 4))
    return dt, ins, odt, (3, 4), {}, [], ref, dict(tol(), scale=scale,
                                                   sign_free=R.ew_sign_free(op, dt, ins, (3, 4)))


@pytest.mark.parametrize("op", OPS)
def test_convenience_function(ctx, rng, seed, op):
    """gpuos_<op>(ctx, out, inputs..., params) writes the NumPy reference's result (within the
    tolerances of test_ops) into an output filled with sentinels, bit for bit what the same
    gpuos_submit task writes."""
    L = lib()
    name = "gpuos_" + op
    if name not in L.convenience:
        pytest.fail("%s is not declared in gpuos.h" % name)
    if L.convenience[name] is None:
        pytest.fail("%s is declared but not exported, or has a parameter type the binding lacks" % name)
    dt, values, odt, oshape, kw, extra, ref, tolerance = _conv_case(ctx, rng, op)
    idts = ["bool" if op == "where" and i == 0 else dt for i in range(len(values))]
    ins = [ctx.tensor(v, d) for v, d in zip(values, idts)]
    out = H.make_output(ctx, rng, odt, oshape)
    st = getattr(L, name)(ctx.ptr, out.tensor.ptr, *[t.ptr for t in ins], *extra)
    assert st == OK, "%s: %s %s" % (name, status_name(st), ctx.last_error())
    H.check(ctx, out, ref, what="%s on %s: out %s" % (name, dt, out.describe()), inputs=list(zip(idts, values)),
            seed=seed, **tolerance)
    sub = H.make_output(ctx, rng, odt, oshape)
    ctx.submit(op, sub.tensor, ins, **kw)
    a, b = ctx.download(out.tensor), ctx.download(sub.tensor)
    assert H.bits_equal(a, b), "%s: %r, gpuos_submit gives %r" % (name, a, b)


def test_convenience_reduction_axes_null(ctx):
    L = lib()
    x = ctx.tensor(np.arange(12, dtype=np.float64).reshape(3, 4), "f64")
    out = ctx.new("f64", ())
    assert L.gpuos_sum(ctx.ptr, out.ptr, x.ptr, None, 0, 0) == OK, ctx.last_error()
    assert float(ctx.download(out)) == 66.0
    out = ctx.new("f64", (1, 1))
    assert L.gpuos_max(ctx.ptr, out.ptr, x.ptr, None, 0, 1) == OK, ctx.last_error()
    assert float(ctx.download(out)[0, 0]) == 11.0
    axes = (ctypes.c_int * 1)(5)
    out = ctx.new("f64", (3,))
    st = L.gpuos_sum(ctx.ptr, out.ptr, x.ptr, axes, 1, 0)
    assert st == 9, "gpuos_sum with axis 5 of a rank-2 tensor: %s" % status_name(st)
