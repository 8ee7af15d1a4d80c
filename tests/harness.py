"""harness - operands of any layout with their NumPy mirrors, random inputs per operator, and the
check of an output against the reference (with the untouched memory around it).

An Operand is a gpuos view of a base tensor together with the host copy of the base and the flat
indices of the view's elements in it, so that the test knows every element's value and can check
that an op wrote exactly its output elements and nothing else.
"""
import numpy as np

import reference as R
from gpuos_ctypes import INTS, STORAGE, to_storage, view_indices

LAYOUTS = ("contig", "strided", "permuted", "negative", "mixed")


class Operand:
    def __init__(self, tensor, base_tensor, base, idx, dtype):
        self.tensor, self.base_tensor, self.base, self.idx, self.dtype = tensor, base_tensor, base, idx, dtype
        self.values = np.asarray(base.reshape(-1)[idx])

    @property
    def shape(self):
        return tuple(self.idx.shape)

    def describe(self):
        i = self.tensor.info()
        return "%s%s strides=%s offset=%d" % (self.dtype, list(i.shape), list(i.strides), i.offset)


def geometry(rng, shape, layout):
    """(base_numel, strides, offset) of a view of the given layout over a fresh 1-D base:
    contig: row-major; strided: steps 1..3 and gaps; permuted: axes stored in a random order;
    negative: some strides negative; mixed: all of these."""
    r = len(shape)
    perm = list(range(r))
    step = [1] * r
    neg = [False] * r
    gap, pad0, pad1 = 1, 0, 0
    if layout in ("strided", "mixed"):
        step = [int(rng.integers(1, 4)) for _ in range(r)]
        gap = int(rng.integers(1, 3))
        pad0, pad1 = int(rng.integers(0, 4)), int(rng.integers(0, 3))
    if layout in ("permuted", "mixed") and r > 1:
        perm = list(rng.permutation(r))
        if perm == list(range(r)):
            perm = perm[::-1]
    if layout in ("negative", "mixed"):
        neg = [bool(rng.random() < 0.5) for _ in range(r)]
        if r and not any(neg):
            neg[int(rng.integers(r))] = True
    strides = [0] * r
    s = gap
    for k in reversed(perm):
        strides[k] = s * step[k]
        s *= max(shape[k], 1) * step[k]
    offset = pad0
    for k in range(r):
        if neg[k]:
            offset += (max(shape[k], 1) - 1) * strides[k]
            strides[k] = -strides[k]
    return pad0 + s + pad1, strides, offset


def random_storage(rng, dtype, n):
    """n random elements of dtype (finite floats)."""
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype in INTS:
        lo, hi = R.int_range(dtype)
        return rng.integers(lo, hi, size=n, endpoint=True, dtype=STORAGE[dtype])
    return to_storage(rng.uniform(-100, 100, n), dtype)


def sentinel_storage(rng, dtype, n):
    """Sentinels of output memory: random elements, and for bool byte 2, no bool value, so that
    an element left unwritten never passes for a result (mismatches compares bool bytes)."""
    if dtype == "bool":
        return np.full(n, 2, dtype=np.uint8).view(np.bool_)
    return random_storage(rng, dtype, n)


def make_operand(ctx, rng, dtype, values, layout="contig"):
    """A gpuos view holding values (a storage array), laid out as layout. layout "bcast" makes a
    stride-0 view (gpuos_view_broadcast_to of a smaller tensor): the values are then replaced by
    their broadcast along the axes that were made size 1 (see Operand.values)."""
    values = np.asarray(values)
    shape = values.shape
    if layout == "bcast":
        r = len(shape)
        small = values
        lead = int(rng.integers(0, r + 1)) if r else 0
        for k in range(r):
            if shape[k] > 1 and rng.random() < 0.6:
                small = np.take(small, [0], axis=k)
        small = small[(0,) * lead] if lead and all(small.shape[k] == 1 for k in range(lead)) else small
        t = ctx.tensor(small, dtype)
        v = t.broadcast_to(shape)
        base = np.ascontiguousarray(small).reshape(-1)
        # which element of small each element of the view is, by NumPy's broadcasting (not from the
        # library's view: a review's broken gpuos_view_broadcast_to passed every test here)
        idx = np.broadcast_to(np.arange(base.size).reshape(np.shape(small)), shape)
        return Operand(v, t, base, np.array(idx), dtype)
    if layout == "contig":
        t = ctx.tensor(values, dtype)
        base = np.ascontiguousarray(to_storage(values, dtype)).reshape(-1)
        return Operand(t, t, base, np.arange(base.size).reshape(shape), dtype)
    n, strides, offset = geometry(rng, shape, layout)
    base = random_storage(rng, dtype, n)
    idx = view_indices(shape, strides, offset)
    base[idx.reshape(-1)] = to_storage(values, dtype).reshape(-1)
    bt = ctx.tensor(base, dtype)
    return Operand(bt.strided(shape, strides, offset), bt, base, idx, dtype)


def make_output(ctx, rng, dtype, shape, layout="contig"):
    """An output view over a base filled with sentinels ("contig": a new tensor)."""
    shape = tuple(shape)
    if layout == "contig":
        base = sentinel_storage(rng, dtype, int(np.prod(shape, dtype=np.int64)))
        t = ctx.new(dtype, shape)
        ctx.upload(t, base.reshape(shape))
        return Operand(t, t, base, np.arange(base.size).reshape(shape), dtype)
    n, strides, offset = geometry(rng, shape, layout)
    base = sentinel_storage(rng, dtype, n)
    bt = ctx.tensor(base, dtype)
    return Operand(bt.strided(shape, strides, offset), bt, base, view_indices(shape, strides, offset), dtype)


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.view(np.uint8).reshape(a.shape + (-1,)).tobytes() == b.view(np.uint8).reshape(b.shape + (-1,)).tobytes()


def check(ctx, out, ref, *, rtol=0.0, atol=0.0, scale=None, acc=0.0, what="", inputs=(), seed=None,
          before=None, sign_free=None):
    """Downloads out's base and checks that the view holds ref (within tolerance) and that every
    other element of the base is unchanged (before: the base before the op; default out.base).
    inputs: [(dtype, storage)] shown beside each mismatch. sign_free: where an exact zero may have
    either sign (reference.ew_sign_free, reduce_sign_free)."""
    dt = out.dtype
    now = ctx.download(out.base_tensor).reshape(-1)
    got = now[out.idx]
    ref = np.asarray(ref)
    msgs = []
    if got.shape != ref.shape:
        msgs.append("output shape %s, reference shape %s" % (got.shape, ref.shape))
    else:
        bad = R.mismatches(got, ref, dt, rtol, atol, scale, acc, sign_free)
        if bad.size:
            msgs.append("%d of %d elements differ (rtol=%g atol=%g acc=%g):" % (bad.size, ref.size, rtol, atol, acc))
            for fi in bad[:8]:
                mi = np.unravel_index(fi, ref.shape) if ref.ndim else ()
                ins = []
                for xdt, xv in inputs:
                    xv = np.asarray(xv)
                    try:
                        xb = np.broadcast_to(xv, ref.shape)
                        ins.append(repr(R.show(xb, xdt)[mi] if ref.ndim else R.show(xb, xdt)))
                    except ValueError:
                        ins.append("(shape %s)" % (xv.shape,))
                sc = "" if scale is None else " scale=%r" % (np.broadcast_to(scale, ref.shape)[mi],)
                msgs.append("  at %s: inputs %s expected %r got %r%s" % (
                    tuple(int(i) for i in mi), ", ".join(ins), R.show(ref, dt)[mi] if ref.ndim else R.show(ref, dt),
                    R.show(got, dt)[mi] if got.ndim else R.show(got, dt), sc))
    mask = np.ones(now.size, dtype=bool)
    mask[out.idx.reshape(-1)] = False
    prev = (out.base if before is None else before).reshape(-1)
    if mask.any() and not bits_equal(now[mask], prev[mask]):
        changed = np.flatnonzero(mask & (now.view(np.uint8).reshape(now.size, -1) !=
                                         prev.view(np.uint8).reshape(prev.size, -1)).any(axis=1))
        msgs.append("memory outside the output view was written: base indices %s" % changed[:8].tolist())
    if msgs:
        raise AssertionError("%s [seed=%s]\n%s" % (what, seed, "\n".join(msgs)))


# ---------------------------------------------------------------- shapes
MAX_DIM = {0: 1, 1: 33, 2: 9, 3: 6, 4: 4, 5: 3, 6: 3, 7: 2, 8: 2}


def random_shape(rng, rank, cap=160):
    shape = [int(rng.integers(1, MAX_DIM[rank] + 1)) for _ in range(rank)]
    while int(np.prod(shape, dtype=np.int64)) > cap:
        k = int(np.argmax(shape))
        shape[k] -= 1
    return tuple(shape)


def broadcast_shapes(rng, shape, n, p_full=0.6):
    """n input shapes whose NumPy broadcast is exactly shape: size-1 axes and missing leading axes."""
    r = len(shape)
    full = [[rng.random() < p_full for _ in range(r)] for _ in range(n)]
    for d in range(r):
        if not any(f[d] for f in full):
            full[int(rng.integers(n))][d] = True
    keep_rank = int(rng.integers(n))     # one operand keeps every axis, so the result has rank r
    out = []
    for i, f in enumerate(full):
        s = [shape[d] if f[d] or shape[d] == 1 else 1 for d in range(r)]
        lead = 0
        while lead < r and s[lead] == 1:
            lead += 1
        drop = 0 if i == keep_rank else int(rng.integers(0, lead + 1))
        out.append(tuple(s[drop:]))
    return out


# ---------------------------------------------------------------- random inputs per operator
def _ints(rng, dtype, shape, lo=None, hi=None):
    dlo, dhi = R.int_range(dtype)
    lo = dlo if lo is None else max(lo, dlo)
    hi = dhi if hi is None else min(hi, dhi)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=STORAGE[dtype])


def _mix(rng, shape, p, a, b):
    return np.where(rng.random(shape) < p, a, b)


TIE_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "minimum", "maximum", "clamp", "min", "max", "argmin",
           "argmax", "where"}
ZERO_OPS = {"any", "all", "logical_and", "logical_or", "logical_xor", "logical_not"}
FLOAT_DOMAIN = {"exp": (-8, 8), "exp2": (-8, 8), "expm1": (-8, 8), "log": (-1, 8), "log2": (-1, 8),
                "sqrt": (-1, 8), "rsqrt": (-1, 8), "log1p": (-1.5, 8), "tan": (-1.3, 1.3),
                "softmax": (-8, 8), "log_softmax": (-8, 8), "matmul": (-2, 2)}


def gen_values(rng, op, dtype, role, shape):
    """Random storage of shape for input number role of op (inputs that exercise its semantics)."""
    shape = tuple(shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        lo, hi = R.int_range(dtype)
        full = _ints(rng, dtype, shape)
        small = _ints(rng, dtype, shape, -10, 10)
        v = _mix(rng, shape, 0.5, small, full)
        if op in ("div", "floordiv", "mod"):
            v = _mix(rng, shape, 0.5, _ints(rng, dtype, shape, -3, 3), v) if role == 1 else \
                _mix(rng, shape, 0.1, np.full(shape, lo, dtype=STORAGE[dtype]), v)
        elif op == "pow":
            v = _mix(rng, shape, 0.7, _ints(rng, dtype, shape, -4, 4), full) if role == 0 else \
                _mix(rng, shape, 0.7, _ints(rng, dtype, shape, -3, 12), _ints(rng, dtype, shape, 0, 70))
        elif op in ("shift_left", "shift_right") and role == 1:
            v = _ints(rng, dtype, shape, -3, R.BITS[dtype] + 3)
        elif op in ("abs", "neg", "sign", "cast"):
            v = _mix(rng, shape, 0.1, np.full(shape, lo, dtype=STORAGE[dtype]),
                     _mix(rng, shape, 0.1, np.full(shape, hi, dtype=STORAGE[dtype]), v))
        elif op in TIE_OPS:
            v = _mix(rng, shape, 0.8, _ints(rng, dtype, shape, -3, 3), full)
        elif op in ZERO_OPS:
            v = _mix(rng, shape, 0.4, np.zeros(shape, dtype=STORAGE[dtype]), v)
        elif op == "prod":
            v = _mix(rng, shape, 0.9, _ints(rng, dtype, shape, -3, 3), full)
        return v.astype(STORAGE[dtype])
    # floats
    lo, hi = FLOAT_DOMAIN.get(op, (-4, 4))
    v = rng.uniform(lo, hi, shape)
    if op in ("floor", "ceil", "round", "trunc"):
        halves = np.floor(rng.uniform(-8, 8, shape)) + 0.5
        v = _mix(rng, shape, 0.4, halves, _mix(rng, shape, 0.3, np.round(v), v))
    elif op == "pow":
        ints = np.round(rng.uniform(-4, 4, shape))
        v = _mix(rng, shape, 0.8, rng.uniform(0, 4, shape), ints) if role == 0 else _mix(rng, shape, 0.5, ints, v)
    elif op == "prod":
        v = np.where(rng.random(shape) < 0.5, -1.0, 1.0) * np.exp(rng.normal(0, 0.1, shape))
    elif op in TIE_OPS:
        v = _mix(rng, shape, 0.5, np.round(v * 2) / 2, v)
        if op in ("min", "max", "argmin", "argmax", "minimum", "maximum", "clamp"):
            v = _mix(rng, shape, 0.04, np.full(shape, np.nan), v)
    elif op in ZERO_OPS:
        v = _mix(rng, shape, 0.4, np.zeros(shape), v)
    elif op in ("floordiv", "mod") and role == 1:
        v = _mix(rng, shape, 0.05, np.zeros(shape), v)
    elif op == "cast":
        v = float_cast_values(rng, shape)
    return to_storage(v, dtype)


def float_cast_values(rng, shape):
    """Values for float -> x casts: fractions, values beyond every integer range, NaN, inf, -0."""
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 127.5, -128.5, 255.9,
                        -1.0, 300.0, -300.0, 40000.0, -40000.0, 65504.0, 70000.0, 3e9, -3e9, 1e19, -1e19,
                        1e30, -1e30, 1e-30])
    v = rng.uniform(-200, 200, shape)
    pick = special[rng.integers(0, special.size, shape)]
    big = rng.uniform(-1, 1, shape) * 10.0 ** rng.integers(0, 25, shape)
    return _mix(rng, shape, 0.4, pick, _mix(rng, shape, 0.4, big, v))
