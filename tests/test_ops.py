"""Every operator on every (op, dtype, rank) the build emitted, against the NumPy reference.

Each case draws fresh random inputs (seed in the failure message; GPUOS_TEST_SEED reproduces) and
runs several variants: contiguous, broadcasting (size-1 and missing leading axes, 0-d operands),
non-contiguous views (steps, permutations, negative strides, stride-0 broadcast views) for inputs
and output, in place, and zero-size axes. Every output check also checks that the memory around a
strided output view was left alone.
"""
import itertools
import math

import numpy as np
import pytest

import harness as H
import reference as R
from gpuos_ctypes import AXES_ALL, DTYPES, ERR_INVALID_ARGUMENT, FLOATS, INTS, OK, OP_ID, status_name, to_storage
from opspec import SPEC_OPS, combos

# ---------------------------------------------------------------- tolerances (the one table)
# Float results are compared with the reference as |got - ref| <= atol + rtol * max(|ref|, scale):
#   dtype   rtol     rtol (transcendental)  atol
# atol only covers the bottom of each type's range (f32, bf16, f64: twice the smallest normal, for
# a device that flushes subnormals; f16: two subnormal steps): a result near zero is held to rtol
# of itself (an atol of 1e-6 let a constant error of 9e-7 in an f32 sin pass).
TOL = {
    "f64": (1e-12, 1e-10, 4.5e-308),
    "f32": (1e-5, 1e-5, 2.4e-38),
    "f16": (2e-3, 2e-3, 1.2e-7),
    "bf16": (1.6e-2, 1.6e-2, 2.4e-38),
}
# scale: the magnitude of the terms where the result is a small difference of large ones (lerp,
# log_softmax, layernorm, rmsnorm). softmax, log_softmax, layernorm and rmsnorm multiply rtol and
# atol by sqrt(n), n the number of elements reduced, relative to max(|ref|, scale); reductions and
# matmul (ACC_OPS) take rtol of |ref| plus acc_tol of the terms' magnitude (README, Tolerances).
# f16 and bf16 references are computed from the rounded inputs (in f64, rounded to f32, then to the
# dtype, as gpuos computes in f32 and rounds once). Integers and bool are exact; NaN == NaN and
# infinities exact everywhere.
# EXACT: ops whose result is one correctly rounded IEEE operation (or no rounding at all) of the
# rounded inputs are compared exactly in every float dtype (rtol = atol = 0): the tolerances above
# would hide a wrong rounding (ties away from zero, truncation) of f16 and bf16 results.
# fma is fused (docs/OPERATORS.md: one rounding in f32 / f64; f16 and bf16 round that f32 once more
# on store): its reference is the exact a*b+c rounded once (reference.fma_compute), compared exactly.
EXACT = {"neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc", "sqrt", "reciprocal", "square", "add",
         "sub", "mul", "div", "minimum", "maximum", "clamp", "where", "copy", "cast", "fill", "arange", "min", "max",
         "fma"}


# ACC_OPS: sums of n terms (reductions, matmul). Their rtol is the result's own rounding, and the
# accumulation gets acc_tol: 4 eps sqrt(n) of the terms' magnitude (scale: sum |a|, |a| @ |b|, ...),
# eps the accumulation type's (f64 2^-53; f16, bf16, f32 accumulate in f32: 2^-24). (rtol sqrt(n)
# of the terms' magnitude let an f32 sum of 100000 terms returning 0 pass.)
ACC_OPS = {"sum", "mean", "prod", "norm2", "var", "std", "matmul"}


def tol(op, dtype, n=None):
    if dtype not in TOL or op in EXACT:
        return 0.0, 0.0
    rtol, rtol_tr, atol = TOL[dtype]
    r = rtol_tr if op in R.TRANSCENDENTAL else rtol
    if n is not None and op not in ACC_OPS:
        f = math.sqrt(max(n, 1))
        r, atol = r * f, atol * f
    return r, atol


def acc_tol(op, dtype, n):
    if dtype not in TOL or op not in ACC_OPS or n is None:
        return 0.0
    return 4.0 * (2.0**-53 if dtype == "f64" else 2.0**-24) * math.sqrt(max(n, 1))


COMBOS = combos()
UNARY = [o for o, s in SPEC_OPS.items() if s.section.startswith("Unary")]
BINARY = [o for o, s in SPEC_OPS.items() if s.section.startswith("Binary")]
TERNARY = [o for o, s in SPEC_OPS.items() if s.section.startswith("Ternary")]
REDUCE = [o for o, s in SPEC_OPS.items() if s.section.startswith("Reductions")]
ELEMENTWISE = set(UNARY) | set(BINARY) | set(TERNARY) | {"cast", "copy", "fill", "arange"}


def n_inputs(op):
    if op in BINARY:
        return 2
    if op in TERNARY:
        return 3
    if op in ("fill", "arange"):
        return 0
    return 1


def out_dtype(op, dtype):
    return R.out_dtype_of(op, dtype, SPEC_OPS[op].out)


def input_dtype(op, dtype, i):
    return "bool" if op == "where" and i == 0 else dtype


COMBO_SET = set(COMBOS)


def supported(op, dtype, rank):
    return (op, dtype, rank) in COMBO_SET


def ident(c):
    return "%s-%s-r%d" % c


# ---------------------------------------------------------------- element-wise
def ew_once(ctx, rng, seed, op, dtype, out_shape, in_shapes, in_layouts, out_layout, *, inplace=None,
            odt=None, scalar=(0.0, 0.0), scalars=(), label=""):
    """One element-wise task. inplace=k: the output is input k's view (same handle, or with
    inplace_copy an equal view made anew). scalars: input indices given as gpuos_tensor_scalar."""
    odt = odt or out_dtype(op, dtype)
    ins, shown = [], []
    for i, (shp, lay) in enumerate(zip(in_shapes, in_layouts)):
        idt = input_dtype(op, dtype, i)
        if i in scalars:
            v = H.gen_values(rng, op, idt, i, ())
            value = float(R.vals(v, idt)) if idt not in INTS else float(int(v))
            t = ctx.scalar(idt, value)
            opnd = H.Operand(t, t, R.from_f64(value, idt).reshape(-1), np.zeros((), dtype=np.int64), idt)
        else:
            opnd = H.make_operand(ctx, rng, idt, H.gen_values(rng, op, idt, i, shp), lay)
        ins.append(opnd)
        shown.append((idt, opnd.values))
    ref, scale = R.elementwise(op, dtype, [o.values for o in ins], odt, scalar, out_shape)
    if inplace is not None:
        src = ins[inplace]
        out = src
        if rng.random() < 0.5 and src.tensor is not src.base_tensor:
            i = src.tensor.info()
            out = H.Operand(src.base_tensor.strided(i.shape, i.strides, i.offset), src.base_tensor, src.base,
                            src.idx, src.dtype)
    else:
        out = H.make_output(ctx, rng, odt, out_shape, out_layout)
    what = "%s %s %s: out %s, inputs %s" % (op, dtype, label, out.describe(), [o.describe() for o in ins])
    if op in ("fill", "arange"):
        what += " scalar=%r" % (tuple(scalar),)
    ctx.submit(op, out.tensor, [o.tensor for o in ins], scalar=scalar)
    rtol, atol = tol(op, odt)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what=what, inputs=shown, seed=seed,
            sign_free=R.ew_sign_free(op, dtype, [o.values for o in ins], out_shape))


VIEW_LAYOUTS = ("strided", "permuted", "negative", "mixed")
# layouts of inputs: the views, and stride-0 broadcast views (harness.make_operand "bcast"); never
# an output's (an output with a stride 0 over an axis above 1 is GPUOS_ERR_BAD_STRIDES)
IN_LAYOUTS = VIEW_LAYOUTS + ("bcast",)


def run_elementwise(ctx, rng, seed, op, dtype, rank):
    n = n_inputs(op)
    shape = H.random_shape(rng, rank)
    full = [shape] * n
    contig = ["contig"] * n
    odts = [None]
    if op == "cast":
        odts = list(DTYPES)
    broadcasting = n >= 2 or op == "copy"
    for odt in odts:
        ew_once(ctx, rng, seed, op, dtype, shape, full, contig, "contig", odt=odt, scalar=fill_scalar(rng, op, dtype),
                label="contiguous")
    odt = odts[int(rng.integers(len(odts)))]
    # broadcasting operands (size-1 and missing leading axes)
    if broadcasting and rank:
        shapes = H.broadcast_shapes(rng, shape, n) if n >= 2 else [H.broadcast_shapes(rng, shape, 2)[1]]
        ew_once(ctx, rng, seed, op, dtype, shape, shapes, contig, "contig", label="broadcast %s" % (shapes,))
    # 0-d operands (gpuos_tensor_scalar) broadcast against the others
    if n >= 2:
        k = int(rng.integers(n))
        ew_once(ctx, rng, seed, op, dtype, shape, full, contig, "contig", scalars=(k,),
                label="0-d input %d" % k)
    # views everywhere
    lays = [str(rng.choice(VIEW_LAYOUTS + ("bcast",))) for _ in range(n)]
    ew_once(ctx, rng, seed, op, dtype, shape, full, lays, str(rng.choice(VIEW_LAYOUTS)), odt=odt,
            scalar=fill_scalar(rng, op, dtype), label="views %s" % lays)
    # in place: the output is the very view of an input
    cands = [i for i in range(n) if input_dtype(op, dtype, i) == out_dtype(op, dtype)]
    if cands:
        k = cands[int(rng.integers(len(cands)))]
        lays = [str(rng.choice(("contig",) + VIEW_LAYOUTS)) for _ in range(n)]
        ew_once(ctx, rng, seed, op, dtype, shape, full, lays, None, inplace=k, odt=dtype if op == "cast" else None,
                label="in place (out = input %d)" % k)
    # zero-size axis
    if rank:
        z = list(shape)
        z[int(rng.integers(rank))] = 0
        z = tuple(z)
        ew_once(ctx, rng, seed, op, dtype, z, [z] * n, [str(rng.choice(("contig",) + VIEW_LAYOUTS)) for _ in range(n)],
                str(rng.choice(("contig",) + VIEW_LAYOUTS)), odt=odt, scalar=fill_scalar(rng, op, dtype),
                label="zero-size %s" % (z,))


def fill_scalar(rng, op, dtype):
    if op == "fill":
        if rng.random() < 0.5:
            return (float(H.float_cast_values(rng, ())), 0.0)
        return (float(np.round(rng.uniform(-100, 100), 1)), 0.0)
    if op == "arange":
        if dtype in FLOATS:
            return (float(rng.uniform(-10, 10)), float(rng.uniform(-2, 2)))
        start = float(rng.integers(-100, 100)) + (0.5 if rng.random() < 0.3 else 0.0)
        step = float(rng.choice([-3.0, -1.0, -0.25, 0.5, 1.0, 2.0, 7.0]))
        return (start, step)
    return (0.0, 0.0)


# ---------------------------------------------------------------- reductions
def axis_subsets(rng, rank):
    if rank <= 3:
        subs = [tuple(c) for k in range(rank + 1) for c in itertools.combinations(range(rank), k)]
    else:
        subs = [(), tuple(range(rank))]
        for _ in range(4):
            k = int(rng.integers(1, rank))
            subs.append(tuple(sorted(rng.choice(rank, k, replace=False).tolist())))
    return [(s, sum(1 << a for a in s)) for s in subs] + [(tuple(range(rank)), AXES_ALL)]


def reduce_once(ctx, rng, seed, op, dtype, shape, axes, mask, keepdim, corr, in_layout, out_layout, label="",
                values=None):
    """values: the input's storage (default: random inputs for op of shape)."""
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, shape) if values is None else values,
                       in_layout)
    ref, scale, n = R.reduce(op, dtype, x.values, axes, keepdim, corr)
    odt = out_dtype(op, dtype)
    out = H.make_output(ctx, rng, odt, ref.shape, out_layout)
    what = "%s %s %s: axes=%s mask=%#x keepdim=%d correction=%d, in %s, out %s" % (
        op, dtype, label, axes, mask, keepdim, corr, x.describe(), out.describe())
    ctx.submit(op, out.tensor, [x.tensor], axes=mask, keepdim=keepdim, correction=corr)
    rtol, atol = tol(op, odt, n)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, acc=acc_tol(op, odt, n), what=what,
            inputs=[(dtype, x.values)], seed=seed, sign_free=R.reduce_sign_free(op, dtype, x.values, axes, keepdim))


def run_reduce(ctx, rng, seed, op, dtype, rank):
    shape = H.random_shape(rng, rank, cap=120)
    corrs = (0, 1) if op in ("var", "std") else (0,)
    for axes, mask in axis_subsets(rng, rank):
        for keepdim in (0, 1):
            for corr in corrs:
                lay = str(rng.choice(("contig",) * 2 + IN_LAYOUTS))
                olay = str(rng.choice(("contig",) * 3 + VIEW_LAYOUTS))
                reduce_once(ctx, rng, seed, op, dtype, shape, axes, mask, keepdim, corr, lay, olay)
    if op in ("var", "std"):   # N - correction <= 0
        reduce_once(ctx, rng, seed, op, dtype, shape, tuple(range(rank)), AXES_ALL, 0,
                    int(np.prod(shape, dtype=np.int64)) + int(rng.integers(0, 2)), "contig", "contig",
                    label="correction >= N")
    if rank:
        z = list(shape)
        zk = int(rng.integers(rank))
        z[zk] = 0
        z = tuple(z)
        others = [a for a in range(rank) if a != zk]
        # reducing over the zero-size axis (the other axes non-empty)
        axes = tuple(sorted([zk] + [a for a in others if rng.random() < 0.5]))
        mask = sum(1 << a for a in axes)
        if op in ("min", "max", "argmin", "argmax"):
            x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, z))
            oshape = tuple(z[a] for a in range(rank) if a not in axes)
            out = H.make_output(ctx, rng, out_dtype(op, dtype), oshape)
            st = ctx.try_submit(op, out.tensor, [x.tensor], axes=mask)
            assert st == ERR_INVALID_ARGUMENT, "%s %s over zero elements %s axes %s: %s, expected %s" % (
                op, dtype, z, axes, status_name(st), status_name(ERR_INVALID_ARGUMENT))
            assert ctx.last_error() != ""
        else:
            for keepdim in (0, 1):
                reduce_once(ctx, rng, seed, op, dtype, z, axes, mask, keepdim, corrs[-1], "contig", "contig",
                            label="over zero elements")
        # keeping the zero-size axis: an empty output
        if others:
            axes = (others[int(rng.integers(len(others)))],)
            reduce_once(ctx, rng, seed, op, dtype, z, axes, 1 << axes[0], 1, corrs[0], "contig", "contig",
                        label="empty output")


# ---------------------------------------------------------------- matmul
def matmul_shapes(rng, rank):
    """(a_shape, b_shape) pairs whose larger operand has the given rank (rank 0: a 0-d result)."""
    M, K, N = (int(rng.integers(1, 6)) for _ in range(3))
    if rank == 0:
        return [((K,), (K,))]
    if rank == 1:
        return [((K,), (K,)), ((M, K), (K,)), ((K,), (K, N))]
    batch = H.random_shape(rng, rank - 2, cap=12)
    cases = [(batch + (M, K), batch + (K, N))]
    shapes = H.broadcast_shapes(rng, batch, 2)
    cases.append((shapes[0] + (M, K), shapes[1] + (K, N)))
    cases.append((batch + (M, K), (K,)))
    cases.append(((K,), batch + (K, N)))
    return cases


def matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, la, lb, lo, label="", values=None):
    """values: (a, b) storage (default: random inputs of a_shape, b_shape)."""
    av, bv = values if values is not None else (H.gen_values(rng, "matmul", dtype, 0, a_shape),
                                                 H.gen_values(rng, "matmul", dtype, 1, b_shape))
    a = H.make_operand(ctx, rng, dtype, av, la)
    b = H.make_operand(ctx, rng, dtype, bv, lb)
    ref, scale, k = R.matmul(dtype, a.values, b.values)
    out = H.make_output(ctx, rng, dtype, ref.shape, lo)
    what = "matmul %s %s: a %s, b %s, out %s" % (dtype, label, a.describe(), b.describe(), out.describe())
    ctx.submit("matmul", out.tensor, [a.tensor, b.tensor])
    rtol, atol = tol("matmul", dtype, k)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, acc=acc_tol("matmul", dtype, k), what=what,
            inputs=[(dtype, a.values), (dtype, b.values)], seed=seed)


def run_matmul(ctx, rng, seed, op, dtype, rank):
    for a_shape, b_shape in matmul_shapes(rng, rank):
        matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, "contig", "contig", "contig", "contiguous")
        matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, str(rng.choice(IN_LAYOUTS)),
                    str(rng.choice(IN_LAYOUTS)), str(rng.choice(VIEW_LAYOUTS)), "views")
    a_shape, b_shape = matmul_shapes(rng, rank)[-1]
    for zero in ("K", "M"):   # empty inner dimension (sums of nothing: 0), empty output
        za, zb = list(a_shape), list(b_shape)
        if zero == "K":
            za[-1] = 0
            zb[-2 if len(zb) > 1 else -1] = 0
        elif len(za) > 1:
            za[-2] = 0
        else:
            continue
        matmul_once(ctx, rng, seed, dtype, tuple(za), tuple(zb), "contig", "contig", "contig", "%s = 0" % zero)


# ---------------------------------------------------------------- softmax, log_softmax, layernorm, rmsnorm
def softmax_once(ctx, rng, seed, op, dtype, shape, axis, values=None, label=""):
    """values: the input's storage (default: random inputs for op of shape); layouts at random (a
    broadcast input is never worked on in place: it cannot be an output)."""
    lay = str(rng.choice(("contig",) + IN_LAYOUTS))
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, shape) if values is None else values, lay)
    inplace = lay != "bcast" and rng.random() < 0.3
    out = x if inplace else H.make_output(ctx, rng, dtype, shape, str(rng.choice(("contig",) + VIEW_LAYOUTS)))
    ref, scale = R.softmax(op, dtype, x.values, axis)
    what = "%s %s %saxis=%d%s: in %s, out %s" % (op, dtype, label, axis, " in place" if inplace else "",
                                                 x.describe(), out.describe())
    ctx.submit(op, out.tensor, [x.tensor], axis=axis)
    rtol, atol = tol(op, dtype, shape[axis])
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what=what, inputs=[(dtype, x.values)], seed=seed)


def run_softmax(ctx, rng, seed, op, dtype, rank):
    shape = H.random_shape(rng, rank, cap=120)
    for axis in range(-rank, rank):
        softmax_once(ctx, rng, seed, op, dtype, shape, axis)
    z = list(shape)
    z[int(rng.integers(rank))] = 0
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, tuple(z)))
    out = H.make_output(ctx, rng, dtype, tuple(z))
    ctx.submit(op, out.tensor, [x.tensor], axis=-1)
    H.check(ctx, out, np.zeros(tuple(z), dtype=out.base.dtype), what="%s %s zero-size %s" % (op, dtype, z), seed=seed)


def norm_once(ctx, rng, seed, op, dtype, shape, use_w, use_b, eps, values=None, label=""):
    """One layernorm / rmsnorm task, layouts at random (broadcast inputs too: never in place).
    values: x's storage (default: random inputs for op of shape)."""
    n = shape[-1]
    xl = str(rng.choice(("contig",) + IN_LAYOUTS))
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, shape) if values is None else values, xl)
    w = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 1, (n,)),
                       str(rng.choice(("contig",) + IN_LAYOUTS))) if use_w else None
    b = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 2, (n,)),
                       str(rng.choice(("contig",) + IN_LAYOUTS))) if use_b else None
    inplace = xl != "bcast" and rng.random() < 0.3
    out = x if inplace else H.make_output(ctx, rng, dtype, shape, str(rng.choice(("contig",) + VIEW_LAYOUTS)))
    if op == "layernorm":
        ref, scale, _ = R.layernorm(dtype, x.values, w and w.values, b and b.values, eps)
    else:
        ref, scale, _ = R.rmsnorm(dtype, x.values, w and w.values, eps)
    ins = [x.tensor, w.tensor if w else None] + ([b.tensor if b else None] if op == "layernorm" else [])
    what = "%s %s %sweight=%s bias=%s eps=%g%s: x %s, out %s" % (
        op, dtype, label, use_w, use_b, eps, " in place" if inplace else "", x.describe(), out.describe())
    ctx.submit(op, out.tensor, ins, scalar=(eps, 0.0))
    rtol, atol = tol(op, dtype, n)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what=what, inputs=[(dtype, x.values)], seed=seed)


def run_norm(ctx, rng, seed, op, dtype, rank):
    shape = H.random_shape(rng, rank, cap=120)
    combos_ = [(w, b) for w in (False, True) for b in ((False, True) if op == "layernorm" else (False,))]
    for use_w, use_b in combos_:
        for eps in (1e-5, 0.5):
            norm_once(ctx, rng, seed, op, dtype, shape, use_w, use_b, eps)
    # zero-size: no rows (a leading axis of 0) and rows of nothing (a last axis of 0). The output is
    # empty: docs/OPERATORS.md lists no error for it (min/max over nothing are the only refused
    # empty reductions), so the task is accepted and writes nothing.
    zs = []
    if rank >= 2:
        z = list(shape)
        z[int(rng.integers(rank - 1))] = 0
        zs.append(("no rows", tuple(z)))
    zs.append(("rows of nothing", tuple(shape[:-1]) + (0,)))
    for label, z in zs:
        for use_w, use_b in combos_:
            x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, z),
                               str(rng.choice(("contig",) + VIEW_LAYOUTS)))
            w = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 1, z[-1:])) if use_w else None
            b = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 2, z[-1:])) if use_b else None
            out = H.make_output(ctx, rng, dtype, z, str(rng.choice(("contig",) + VIEW_LAYOUTS)))
            ins = [x.tensor, w.tensor if w else None] + ([b.tensor if b else None] if op == "layernorm" else [])
            st = ctx.try_submit(op, out.tensor, ins, scalar=(1e-5, 0.0))
            what = "%s %s zero-size %s %s weight=%s bias=%s: x %s, out %s" % (
                op, dtype, label, z, use_w, use_b, x.describe(), out.describe())
            assert st == OK, "%s: %s %s" % (what, status_name(st), ctx.last_error())
            H.check(ctx, out, np.zeros(z, dtype=out.base.dtype), what=what, seed=seed)


RUNNERS = {}
for _o in ELEMENTWISE:
    RUNNERS[_o] = run_elementwise
for _o in REDUCE:
    RUNNERS[_o] = run_reduce
RUNNERS.update(matmul=run_matmul, softmax=run_softmax, log_softmax=run_softmax, layernorm=run_norm,
               rmsnorm=run_norm)


@pytest.mark.parametrize("op,dtype,rank", COMBOS, ids=[ident(c) for c in COMBOS])
def test_op(ctx, rng, seed, op, dtype, rank):
    RUNNERS[op](ctx, rng, seed, op, dtype, rank)


# ---------------------------------------------------------------- special values and integer edges
SPECIAL_OPS = sorted(set(UNARY) | set(BINARY) | {"clamp", "lerp", "fma", "where"}, key=OP_ID.get)


def specials(dtype, op=None):
    big = {"f16": 65504.0, "bf16": 3.3e38, "f32": 3.4e38, "f64": 1.7e308}[dtype]
    tiny = {"f16": 6e-8, "bf16": 1e-38, "f32": 1e-40, "f64": 5e-324}[dtype]
    v = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, tiny, -tiny]
    # gelu: whether 0.5 * a * 2 overflows at the largest value depends on the order of evaluation;
    # lerp: whether w*(b-a) overflows before a is added depends on fused or separate rounding.
    if op not in ("gelu", "lerp"):
        v += [big, -big]
    # where exp(-a) (sigmoid, silu) or exp(-2z) (gelu_tanh) overflows but the result is still
    # normal (sigmoid: subnormal in f32)
    if op in ("sigmoid", "silu", "gelu_tanh"):
        v += [-10.06, -10.5, -89.5, -90.5, -95.0, -715.0]
    # near 0, where expm1 and log1p differ from exp(a) - 1 and log(1 + a) (a review's mutation:
    # exp(a) - 1 passed every test, the random inputs lying in (-8, 8))
    if op in ("expm1", "log1p"):
        v += [1e-3, -1e-3, 1e-5, -1e-5, 3e-7, -3e-7, 1e-8, -1e-8]
    return np.array(v)


def _special_cases(op):
    return [(op, dt) for dt in FLOATS if op in SPEC_OPS and dt in SPEC_OPS[op].dtypes and supported(op, dt, 1)]


@pytest.mark.parametrize("op,dtype", [c for o in SPECIAL_OPS for c in _special_cases(o)],
                         ids=["%s-%s" % c for o in SPECIAL_OPS for c in _special_cases(o)])
def test_float_specials(ctx, seed, op, dtype):
    """NaN, +-inf, +-0, halves, the largest and a subnormal value, every pair of them for binary ops."""
    s = to_storage(specials(dtype, op), dtype)
    n = n_inputs(op)
    if op == "where":
        grids = [np.array([True, False]).repeat(s.size * s.size)] + \
                [np.tile(np.repeat(s, s.size), 2), np.tile(s, 2 * s.size)]
    elif n == 1:
        grids = [s]
    elif n == 2:
        grids = [np.repeat(s, s.size), np.tile(s, s.size)]
    else:
        grids = [np.repeat(s, s.size), np.tile(s, s.size), np.tile(s[::-1], s.size)]
    ins = [ctx.tensor(g, input_dtype(op, dtype, i)) for i, g in enumerate(grids)]
    odt = out_dtype(op, dtype)
    out = H.make_output(ctx, np.random.default_rng(0), odt, grids[-1].shape)
    ctx.submit(op, out.tensor, ins)
    ref, scale = R.elementwise(op, dtype, grids, odt)
    rtol, atol = tol(op, odt)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what="%s %s special values" % (op, dtype),
            inputs=[(input_dtype(op, dtype, i), g) for i, g in enumerate(grids)], seed=seed,
            sign_free=R.ew_sign_free(op, dtype, grids))


STORAGE_NP = {"f32": np.float32, "f64": np.float64}


def fma_hard_cases(dtype, rng):
    """(a, b, c) arrays of dtype where only a fused multiply-add rounded once gives the exact
    a*b + c rounded: a*b = 2^-p (1 - 2^-2(p-1)) (p the significand bits), just below half an ulp
    of c = 1 + 2^-(p-1) (odd last bit), so a*b + c lies just below the midpoint between c and
    its successor. Rounding a*b first (unfused), or the sum to a wider type first (f64 for f32,
    x87 long double for f64), lands on the midpoint, which ties to even: c + 2 ulp instead of c.
    Scaled by powers of two, with all signs, plus random triples."""
    p = {"f32": 24, "f64": 53}[dtype]
    a0 = 2.0 ** -p * (1 + 2.0 ** (1 - p))
    b0 = 1 - 2.0 ** (1 - p)
    c0 = 1 + 2.0 ** (1 - p)
    ks = range(-60, 61, 4) if dtype == "f32" else range(-900, 901, 60)
    a, b, c = [], [], []
    for k in ks:
        for sa, sb in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
            a.append(sa * math.ldexp(a0, k))
            b.append(sb * b0)
            c.append(sa * sb * math.ldexp(c0, k))
    n = 200
    lim = 1e3
    a += list(rng.uniform(-lim, lim, n))
    b += list(rng.uniform(-lim, lim, n))
    c += list(rng.uniform(-lim, lim, n) * 10.0 ** rng.integers(-6, 6, n))
    st = STORAGE_NP[dtype]
    return [np.array(x, dtype=np.float64).astype(st) for x in (a, b, c)], len(ks) * 4


@pytest.mark.parametrize("dtype", [d for d in ("f32", "f64") if supported("fma", d, 1)])
def test_fma_one_rounding(ctx, rng, seed, dtype):
    """fma is fused (docs/OPERATORS.md: one rounding in f32 / f64): exact on inputs where an
    unfused or double-rounded a*b + c gives another value (the test checks that they do)."""
    (a, b, c), n_hard = fma_hard_cases(dtype, rng)
    ref = R.fma_compute(dtype, a, b, c).astype(STORAGE_NP[dtype])
    # the hard cases separate a fused fma from the two wrong ways of computing it
    with np.errstate(all="ignore"):
        unfused = (a * b + c)[:n_hard]
        wide = ((a.astype(np.float64) * b + c).astype(np.float32) if dtype == "f32" else
                (a.astype(np.longdouble) * b + c).astype(np.float64))[:n_hard]
    assert not np.any(unfused == ref[:n_hard]), "hard fma cases that an unfused a*b + c gets right"
    if dtype == "f32" or np.finfo(np.longdouble).nmant > 52:
        assert not np.any(wide == ref[:n_hard]), "hard fma cases that a wider a*b + c gets right"
    ins = [ctx.tensor(x, dtype) for x in (a, b, c)]
    out = H.make_output(ctx, rng, dtype, a.shape)
    ctx.submit("fma", out.tensor, ins)
    H.check(ctx, out, ref, what="fma %s, one rounding" % dtype, inputs=[(dtype, a), (dtype, b), (dtype, c)],
            seed=seed)


@pytest.mark.parametrize("dtype", [d for d in ("f32", "f64") if supported("lerp", d, 1)])
def test_lerp_fused(ctx, rng, seed, dtype):
    """lerp is fma(w, b - a, a) (docs/OPERATORS.md): b - a rounded, then one rounding; exact in f32 and
    f64 against that (an unfused a + w * (b - a) passed the tolerance of the other tests)."""
    st = STORAGE_NP[dtype]
    n = 4096
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(st)
    b = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(st)
    w = rng.uniform(-1.5, 1.5, n).astype(st)
    d = (b - a).astype(st)  # rounded in dtype, as the operator does
    ref = R.fma_compute(dtype, w, d, a).astype(st)
    with np.errstate(all="ignore"):
        unfused = (a + w * d).astype(st)
    assert np.any(unfused != ref), "no input where the unfused formula differs: the check proves nothing"
    out = H.make_output(ctx, rng, dtype, a.shape)
    ctx.submit("lerp", out.tensor, [ctx.tensor(a, dtype), ctx.tensor(b, dtype), ctx.tensor(w, dtype)])
    H.check(ctx, out, ref, what="lerp %s, fused" % dtype, inputs=[(dtype, a), (dtype, b), (dtype, w)], seed=seed)


@pytest.mark.parametrize("dtype", [d for d in ("f32", "f64") if supported("sigmoid", d, 1)])
def test_sigmoid_far_below_zero(ctx, rng, seed, dtype):
    """sigmoid(a) = exp(a) / (1 + exp(a)) ~ exp(a) where exp(-a) overflows but exp(a) is still a
    subnormal: nonzero, and within a few subnormal steps of exp(a) (the tolerance's absolute
    term alone would let 0 pass)."""
    lo, hi = {"f32": (-102.0, -88.8), "f64": (-744.0, -709.8)}[dtype]
    a = np.concatenate([[lo, hi], rng.uniform(lo, hi, 62)]).astype(STORAGE_NP[dtype])
    out = H.make_output(ctx, rng, dtype, a.shape)
    ctx.submit("sigmoid", out.tensor, [ctx.tensor(a, dtype)])
    got = ctx.download(out.base_tensor).reshape(-1)[out.idx].astype(np.float64)
    ref = np.exp(a.astype(np.float64)) if dtype == "f32" else \
        np.exp(a.astype(np.longdouble)).astype(np.float64)
    step = float(np.finfo(STORAGE_NP[dtype]).smallest_subnormal)
    bad = np.nonzero(~((got > 0) & (np.abs(got - ref) <= 4 * step + 1e-6 * ref)))[0]
    assert bad.size == 0, "sigmoid %s (seed %d): %s" % (
        dtype, seed, ", ".join("sigmoid(%r) = %r, expected %r" % (float(a[i]), got[i], ref[i]) for i in bad[:6]))


# ---------------------------------------------------------------- the host's vector exp
# On the host, exp, sigmoid, silu, gelu_tanh, tanh, softmax and log_softmax of f16, bf16 and f32
# run blocks of 32 items through a vectorizable f32 exp (templates/host_ops.c.j2,
# gpuos__hx_expf), the rest of a run one item at a time; test_float_specials and
# test_reduce_specials reach only the latter (runs of at most 17 items, rows of 5).
EXP_FAMILY = ("exp", "sigmoid", "silu", "gelu", "gelu_tanh", "tanh")


def exp_edges(dtype, op):
    """specials(dtype, op), and where f32 exp overflows (88.72), turns subnormal (-87.3) and
    underflows (-103.97), where tanh on the host changes formula (|a| = 0.55), tiny and large."""
    return np.concatenate([specials(dtype, op), [
        88.72, 88.7228, 88.7229, 88.73, 89.0, 100.0, -87.33, -87.34, -100.0, -103.97, -103.98, -104.0,
        -104.5, -150.0, 0.55, -0.55, 0.5499, -0.5501, 1e-3, -1e-3, 1e-20, -1e-30, 9.1, -9.1, 20.0, -20.0,
        # gelu (host: gpuos__hx_gelu): its clamp (|a| = 14.5), where its result turns subnormal
        # (-13.1) and underflows (-14.1), 1 + erf's cancellation in f64 (-8.3)
        -8.3, -10.0, -12.5, -13.0, -13.1, -13.2, -14.0, -14.1, -14.4, -14.5, -14.6, 14.5, 14.6]])


def _exp_family_cases():
    return [(op, dt) for op in EXP_FAMILY for dt in FLOATS
            if op in SPEC_OPS and dt in SPEC_OPS[op].dtypes and supported(op, dt, 2)]


@pytest.mark.parametrize("op,dtype", _exp_family_cases(), ids=["%s-%s" % c for c in _exp_family_cases()])
def test_exp_family_blocks(ctx, rng, seed, op, dtype):
    """The special values and exp's edges, each three times at random places among random inputs
    of a long run (a 5 x 203 input: rows of 6 blocks and 11 items), contiguous, as views (strided,
    negative, transposed: gathered blocks) and in place."""
    e = exp_edges(dtype, op)
    shape = (5, 203)
    n = shape[0] * shape[1]
    v = np.concatenate([np.tile(e, 3), rng.uniform(-12.0, 12.0, n - 3 * e.size)])
    v = to_storage(rng.permutation(v), dtype).reshape(shape)
    for lay, olay, inplace in (("contig", "contig", False), ("contig", "contig", True), ("strided", "negative", False),
                               ("permuted", "contig", False), ("mixed", "mixed", True)):
        x = H.make_operand(ctx, rng, dtype, v, lay)
        out = x if inplace else H.make_output(ctx, rng, dtype, shape, olay)
        ref, scale = R.elementwise(op, dtype, [x.values], dtype)
        ctx.submit(op, out.tensor, [x.tensor])
        rtol, atol = tol(op, dtype)
        H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, seed=seed, inputs=[(dtype, x.values)],
                what="%s %s, long runs%s: in %s, out %s" % (op, dtype, " in place" if inplace else "", x.describe(),
                                                           out.describe()),
                sign_free=R.ew_sign_free(op, dtype, [x.values]))


def _softmax_block_cases():
    return [(op, dt) for op in ("softmax", "log_softmax") for dt in FLOATS
            if dt in SPEC_OPS[op].dtypes and supported(op, dt, 2)]


@pytest.mark.parametrize("op,dtype", _softmax_block_cases(), ids=["%s-%s" % c for c in _softmax_block_cases()])
def test_softmax_long_rows(ctx, rng, seed, op, dtype):
    """Rows of 1 to 3 blocks of 32 and a rest (the host's lanes of the maximum and the sum), with
    the patterns of test_reduce_specials: one +inf, one -inf, both, NaN, only -inf, large values
    (1000 apart), values whose exponentials are subnormal or underflow, along both axes."""
    inf, nan = np.inf, np.nan
    for n in (31, 32, 33, 64, 97, 203):
        shape = (9, n)
        v = R.vals(H.gen_values(rng, op, dtype, 0, shape), dtype).astype(np.float64)
        at = rng.integers(n, size=4)
        v[0, at[0]] = inf
        v[1, at[1]] = -inf
        v[2, at[0]], v[2, at[1]] = inf, -inf
        v[3, at[2]] = nan
        v[4] = -inf
        v[5] = rng.uniform(-1000.0, 1000.0, n)
        v[6, :] = -95.0
        v[6, at[3]] = 0.0
        v[7] = rng.uniform(-120.0, 0.0, n)
        v[7, at[3]] = 1.0
        st = to_storage(v, dtype)
        for axis in (-1, 0):
            softmax_once(ctx, rng, seed, op, dtype, shape, axis, values=st, label="long rows ")


# ---------------------------------------------------------------- NaN and infinities in reductions, row ops
ROW_OPS = ["matmul", "softmax", "log_softmax", "layernorm", "rmsnorm"]
SPECIALS_SHAPE = (3, 4, 5)


def _reduce_special_cases():
    return [(op, dt) for op in REDUCE + ROW_OPS for dt in FLOATS
            if dt in SPEC_OPS[op].dtypes and supported(op, dt, len(SPECIALS_SHAPE))]


def special_values(rng, op, dtype, shape, role=0, p=0.04):
    """Random inputs of op with NaN, +inf and -inf (each with probability p) among them; along the
    last axis of a (3, 4, 5) input some rows hold chosen patterns: one +inf, one -inf, both, NaN
    with +inf, only +inf, only -inf, only NaN, and finite values only."""
    v = R.vals(H.gen_values(rng, op, dtype, role, shape), dtype).astype(np.float64)
    u = rng.random(shape)
    v = np.where(u < p, np.nan, np.where(u < 2 * p, np.inf, np.where(u < 3 * p, -np.inf, v)))
    if tuple(shape) == SPECIALS_SHAPE:
        inf, nan = np.inf, np.nan
        v[0, 0] = [1.0, inf, 2.0, 0.5, -1.5]
        v[0, 1] = [1.0, -inf, 2.0, 0.5, -1.5]
        v[0, 2] = [inf, 1.0, -inf, 2.0, 0.5]
        v[0, 3] = [nan, 1.0, inf, -inf, 0.5]
        v[1, 0] = [inf] * 5
        v[1, 1] = [-inf] * 5
        v[1, 2] = [nan] * 5
        v[1, 3] = R.vals(H.gen_values(rng, op, dtype, role, (5,)), dtype)
        # large finite values: softmax and log_softmax must subtract the row's maximum before exp
        # (a review's mutation that did not subtract it passed every test: the inputs lay in (-8, 8))
        v[2, 0] = [1000.0, 999.5, -1000.0, 998.0, 0.0]
    return to_storage(v, dtype)


@pytest.mark.parametrize("op,dtype", _reduce_special_cases(), ids=["%s-%s" % c for c in _reduce_special_cases()])
def test_reduce_specials(ctx, rng, seed, op, dtype):
    """Reductions over every set of axes, softmax and log_softmax along every axis, layernorm,
    rmsnorm and matmul, of inputs holding NaN, +inf and -inf, against the NumPy reference of the
    documented formulas (IEEE arithmetic: inf - inf and inf * 0 give NaN; min, max propagate NaN;
    argmin, argmax give the first NaN, else the first extreme, -inf / +inf included; any and all
    take NaN as true)."""
    shape = SPECIALS_SHAPE
    rank = len(shape)
    if op in REDUCE:
        corrs = (0, 1) if op in ("var", "std") else (0,)
        for axes, mask in axis_subsets(rng, rank):
            for keepdim in (0, 1):
                for corr in corrs:
                    lay, olay = (str(rng.choice(("contig",) + VIEW_LAYOUTS)) for _ in range(2))
                    reduce_once(ctx, rng, seed, op, dtype, shape, axes, mask, keepdim, corr, lay, olay,
                                label="specials", values=special_values(rng, op, dtype, shape))
    elif op in ("softmax", "log_softmax"):
        for axis in range(-rank, rank):
            softmax_once(ctx, rng, seed, op, dtype, shape, axis, values=special_values(rng, op, dtype, shape),
                         label="specials ")
    elif op in ("layernorm", "rmsnorm"):
        for use_w, use_b in ((False, False), (True, True)):
            norm_once(ctx, rng, seed, op, dtype, shape, use_w, use_b and op == "layernorm", 1e-5,
                      values=special_values(rng, op, dtype, shape), label="specials ")
    else:
        # batched (2, 3, 5) @ (2, 5, 4), (3, 5) @ (5,) and (5,) @ (5, 4); b holds zeros too (inf * 0)
        for a_shape, b_shape in (((2, 3, 5), (2, 5, 4)), ((3, 5), (5,)), ((5,), (5, 4))):
            av = special_values(rng, op, dtype, a_shape, 0, p=0.06)
            bv = special_values(rng, op, dtype, b_shape, 1, p=0.06)
            bv = np.where(rng.random(b_shape) < 0.15, to_storage(np.zeros(b_shape), dtype), bv)
            matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, str(rng.choice(("contig",) + VIEW_LAYOUTS)),
                        str(rng.choice(("contig",) + VIEW_LAYOUTS)), "contig", label="specials", values=(av, bv))


INT_EDGE_OPS = [o for o in SPECIAL_OPS if any(d in SPEC_OPS[o].dtypes for d in INTS)]


def _int_cases(op):
    return [(op, dt) for dt in INTS if dt in SPEC_OPS[op].dtypes and supported(op, dt, 1)]


@pytest.mark.parametrize("op,dtype", [c for o in INT_EDGE_OPS for c in _int_cases(o)],
                         ids=["%s-%s" % c for o in INT_EDGE_OPS for c in _int_cases(o)])
def test_int_edges(ctx, seed, op, dtype):
    """INT_MIN, INT_MAX, -1, 0, 1, 2, bits-1, bits: every pair for binary ops (wrapping, division by
    zero, INT_MIN / -1, out-of-range shifts, negative exponents)."""
    lo, hi = R.int_range(dtype)
    b = R.BITS[dtype]
    e = sorted(v for v in {lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, b - 1, b, b + 1, -1, -2, -3, -b} if lo <= v <= hi)
    s = np.array(e, dtype=np.int64).astype(to_storage(np.zeros(1), dtype).dtype)
    n = n_inputs(op)
    if op == "where":
        grids = [np.array([True, False]).repeat(s.size * s.size), np.tile(np.repeat(s, s.size), 2),
                 np.tile(s, 2 * s.size)]
    elif n == 1:
        grids = [s]
    elif n == 2:
        grids = [np.repeat(s, s.size), np.tile(s, s.size)]
    else:
        grids = [np.repeat(s, s.size), np.tile(s, s.size), np.tile(s[::-1], s.size)]
    ins = [ctx.tensor(g, input_dtype(op, dtype, i)) for i, g in enumerate(grids)]
    odt = out_dtype(op, dtype)
    out = H.make_output(ctx, np.random.default_rng(0), odt, grids[-1].shape)
    ctx.submit(op, out.tensor, ins)
    ref, _ = R.elementwise(op, dtype, grids, odt)
    H.check(ctx, out, ref, what="%s %s integer edge values" % (op, dtype),
            inputs=[(input_dtype(op, dtype, i), g) for i, g in enumerate(grids)], seed=seed)


# ---------------------------------------------------------------- casts, fill, arange, copy
def edge_values(dtype):
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTS:
        lo, hi = R.int_range(dtype)
        vals = sorted(v for v in {lo, lo + 1, -1, 0, 1, 2, 127, 128, 255, 256, 32767, 32768, 65535, 65536,
                                  2**24 + 1, 2**24 + 2**16 + 1, 2**31 - 1, 2**53 + 1, 2**63 - 1, hi, hi - 1, 16809985,
                                  2**60 + 2**52 + 1, -(2**60 + 2**52 + 1)} if lo <= v <= hi)
        return np.array(vals, dtype=object).astype(to_storage(np.zeros(1), dtype).dtype)
    return to_storage(H.float_cast_values(np.random.default_rng(1), (0,)).tolist() + [
        np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 128.0, -129.0, 255.5,
        256.0, -1.0, 32767.5, 32768.0, -32769.0, 65504.0, 65520.0, 70000.0, 2.0**31, -2.0**31 - 1, 4294967296.0,
        2.0**63, -2.0**63, -2.0**63 - 4096, 1e19, 1e30, -1e30, 1e-30, 1.00390625, 1.005859375, 3.4e38, 1e300,
        -1e300, 1e-310,
        # exact ties of f16 (2049, 2051; subnormal: 2^-25, 3 * 2^-25) and bf16 (257, 259; subnormal:
        # 2^-134, 3 * 2^-134), each rounded to even (a review's mutations rounding them away passed)
        2049.0, 2051.0, -2049.0, 2.0**-25, 3 * 2.0**-25, -3 * 2.0**-25, 257.0, 259.0, -259.0, 2.0**-134,
        3 * 2.0**-134, -3 * 2.0**-134], dtype)


CAST_PAIRS = [(s, d) for s in DTYPES for d in DTYPES if supported("cast", s, 1)]


@pytest.mark.parametrize("src,dst", CAST_PAIRS, ids=["%s-%s" % p for p in CAST_PAIRS])
def test_cast_pairs(ctx, rng, seed, src, dst):
    """Every (src, dst) pair on edge values: saturation, NaN -> 0, wrapping, bool, rounding, overflow."""
    e = edge_values(src)
    r = H.gen_values(rng, "cast", src, 0, (40,))
    x = np.concatenate([e, r])
    t = ctx.tensor(x, src)
    out = H.make_output(ctx, rng, dst, x.shape)
    ctx.submit("cast", out.tensor, [t])
    H.check(ctx, out, R.cast(x, src, dst), what="cast %s -> %s" % (src, dst), inputs=[(src, x)], seed=seed)


FILL_DTYPES = [d for d in DTYPES if supported("fill", d, 1)]


@pytest.mark.parametrize("dtype", FILL_DTYPES)
def test_fill_values(ctx, seed, dtype):
    """fill and gpuos_tensor_scalar convert the double as a cast from f64 would."""
    for v in [0.0, -0.0, 1.0, -1.0, 2.7, -2.7, 0.1, 127.5, 128.0, -129.0, 255.0, 256.0, 1e10, -1e10, 65520.0,
              1e300, 1e-300, float("nan"), float("inf"), float("-inf"), 2.0**63, -(2.0**63), 1.00390625]:
        ref = R.from_f64(v, dtype)
        out = H.make_output(ctx, np.random.default_rng(0), dtype, (5,))
        ctx.submit("fill", out.tensor, [], scalar=(v, 0.0))
        H.check(ctx, out, np.broadcast_to(ref, (5,)), what="fill %s value %r" % (dtype, v), seed=seed)
        s = ctx.scalar(dtype, v)
        got = ctx.download(s)
        assert R.mismatches(got, ref, dtype).size == 0, "gpuos_tensor_scalar(%s, %r) = %r, expected %r" % (
            dtype, v, R.show(got, dtype), R.show(ref, dtype))


ARANGE_DTYPES = [d for d in DTYPES if supported("arange", d, 1)]


def test_var_edges(ctx):
    """var/std where a chunk's plain sum would leave f32's range or round a constant's mean: the
    host takes each chunk in two passes since session 32 (a review: std([2e38, 2e38]) was inf,
    a constant broadcast row's var over N - N elements inf instead of 0/0 = NaN)."""
    def red(op, x, corr):
        out = ctx.new("f32", ())
        ctx.submit(op, out, [x], correction=corr)
        return float(np.asarray(ctx.download(out)).reshape(-1)[0])
    big = ctx.tensor(np.array([2e38, 2e38], dtype=np.float32), "f32")
    assert red("std", big, 0) == 0.0 and red("var", big, 1) == 0.0
    many = ctx.tensor(np.full(1024, 1e37, dtype=np.float32), "f32")
    assert red("std", many, 1) == 0.0
    one = ctx.tensor(np.array([0.1], dtype=np.float32), "f32")
    row = one.broadcast_to((1030,))
    assert red("var", row, 0) == 0.0
    assert math.isnan(red("var", row, 1030))
    mixed = ctx.tensor(np.array([3e38, -3e38] * 700, dtype=np.float32), "f32")
    assert math.isinf(red("var", mixed, 0)) or math.isnan(red("var", mixed, 0))  # as NumPy: past f32's range


@pytest.mark.parametrize("dtype", ARANGE_DTYPES)
def test_arange_values(ctx, seed, dtype):
    """arange over a strided 2-D view: the flat row-major index of the view, computed in f64, cast
    (integers saturate)."""
    for start, step in [(0.0, 1.0), (-5.0, 0.5), (100.0, 7.0), (-200.0, 3.0), (1e9, 1e8), (0.1, 0.1),
                        (2.0**53, 1.0)]:
        rng = np.random.default_rng(3)
        out = H.make_output(ctx, rng, dtype, (7, 9), "mixed")
        ref, _ = R.elementwise("arange", dtype, [], dtype, (start, step), (7, 9))
        ctx.submit("arange", out.tensor, [], scalar=(start, step))
        rtol, atol = tol("arange", dtype)
        H.check(ctx, out, ref, rtol=rtol, atol=atol, what="arange %s start=%r step=%r" % (dtype, start, step),
                seed=seed)


COPY_DTYPES = [d for d in DTYPES if supported("copy", d, 3)]


@pytest.mark.parametrize("dtype", COPY_DTYPES)
def test_copy_layouts(ctx, rng, seed, dtype):
    """copy between every pair of stride patterns, and from a broadcast view."""
    shape = (3, 4, 5)
    lays = ("contig",) + VIEW_LAYOUTS
    for li in lays + ("bcast",):
        for lo in lays:
            x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, "copy", dtype, 0, shape), li)
            out = H.make_output(ctx, rng, dtype, shape, lo)
            ctx.submit("copy", out.tensor, [x.tensor])
            H.check(ctx, out, x.values, what="copy %s %s -> %s (%s -> %s)" % (dtype, li, lo, x.describe(),
                                                                              out.describe()), seed=seed)
    # a row broadcast into a matrix, a 0-d tensor into everything
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, "copy", dtype, 0, (5,)), "negative")
    out = H.make_output(ctx, rng, dtype, shape, "permuted")
    ctx.submit("copy", out.tensor, [x.tensor])
    H.check(ctx, out, np.broadcast_to(x.values, shape), what="copy %s row broadcast" % dtype, seed=seed)
    s = ctx.scalar(dtype, 1.0)
    out = H.make_output(ctx, rng, dtype, shape, "mixed")
    ctx.submit("copy", out.tensor, [s])
    H.check(ctx, out, np.broadcast_to(R.from_f64(1.0, dtype), shape), what="copy %s 0-d" % dtype, seed=seed)
