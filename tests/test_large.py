"""Tensors large enough that the host executor splits a task over its threads (more than 32768
element operations, in chunks) and the GPU over many blocks: element-wise ops over views and
broadcasts, reductions with long and with many rows (argmin/argmax ties across chunk borders),
row ops and matmul. Same references and tolerances as test_ops."""
import numpy as np
import pytest

import harness as H
import reference as R
import test_ops as T
from gpuos_ctypes import AXES_ALL

EW_CASES = [  # op, dtype, output shape, input shapes, input layouts, output layout
    ("add", "f32", (300, 400), [(300, 400), (400,)], ["mixed", "contig"], "permuted"),
    ("add", "i8", (64, 33, 40), [(64, 33, 40), (64, 1, 40)], ["negative", "bcast"], "strided"),
    ("mul", "bf16", (257, 300), [(257, 300), (257, 300)], ["strided", "contig"], "contig"),
    ("where", "f16", (200, 301), [(200, 1), (200, 301), ()], ["contig", "permuted", "contig"], "negative"),
    ("cast", "f32", (90000,), [(90000,)], ["negative"], "strided"),
    ("copy", "u8", (3, 200, 300), [(200, 300)], ["permuted"], "mixed"),
    ("exp", "f64", (50000,), [(50000,)], ["strided"], "contig"),
    ("floordiv", "i32", (40000,), [(40000,), (40000,)], ["contig", "negative"], "contig"),
    ("fma", "f32", (100, 500), [(100, 500), (500,), (100, 1)], ["contig", "contig", "contig"], "contig"),
]


@pytest.mark.parametrize("op,dtype,shape,in_shapes,in_layouts,out_layout", EW_CASES,
                         ids=["%s-%s" % (c[0], c[1]) for c in EW_CASES])
def test_large_elementwise(ctx, rng, seed, op, dtype, shape, in_shapes, in_layouts, out_layout):
    odt = "i16" if op == "cast" else None
    T.ew_once(ctx, rng, seed, op, dtype, shape, in_shapes, in_layouts, out_layout, odt=odt, label="large")


def test_large_fill_arange_inplace(ctx, rng, seed):
    T.ew_once(ctx, rng, seed, "arange", "i64", (300, 301), [], [], "mixed", scalar=(-5.0, 3.0), label="large")
    T.ew_once(ctx, rng, seed, "fill", "bf16", (70000,), [], [], "negative", scalar=(1.5, 0.0), label="large")
    T.ew_once(ctx, rng, seed, "sub", "i64", (250, 260), [(250, 260)] * 2, ["mixed", "contig"], None, inplace=0,
              label="large in place")


REDUCE_CASES = [  # op, dtype, shape, reduced axes (None: all), keepdim
    ("sum", "f32", (64, 2048), (1,), 0),
    ("sum", "f32", (100000,), None, 0),
    ("sum", "i64", (512, 256), None, 1),
    ("sum", "u8", (40000, 3), (0,), 0),
    ("prod", "i32", (300, 200), (0,), 0),
    ("mean", "bf16", (4096, 16), (0,), 1),
    ("min", "bool", (70000,), None, 0),
    ("max", "f16", (128, 512), (1,), 0),
    ("argmax", "f16", (1024, 64), (0,), 0),
    ("argmin", "i8", (50000,), None, 0),
    ("argmax", "i32", (8, 40, 200), (0, 2), 1),
    ("any", "f32", (200, 300), (1,), 0),
    ("all", "i16", (300, 300), (0, 1), 0),
    ("var", "f64", (256, 300), (1,), 0),
    ("std", "f32", (70000,), None, 0),
    ("norm2", "f16", (300, 200), (0,), 0),
]


@pytest.mark.parametrize("op,dtype,shape,axes,keepdim", REDUCE_CASES,
                         ids=["%s-%s-%s" % (c[0], c[1], "x".join(map(str, c[2]))) for c in REDUCE_CASES])
def test_large_reduce(ctx, rng, seed, op, dtype, shape, axes, keepdim):
    mask = AXES_ALL if axes is None else sum(1 << a for a in axes)
    axes = tuple(range(len(shape))) if axes is None else axes
    corr = 1 if op in ("var", "std") else 0
    T.reduce_once(ctx, rng, seed, op, dtype, shape, axes, mask, keepdim, corr, "contig", "contig", label="large")
    T.reduce_once(ctx, rng, seed, op, dtype, shape, axes, mask, keepdim, corr, "mixed", "strided",
                  label="large, views")


def test_large_argext_ties(ctx, seed):
    """One value everywhere but a few equal extremes: the first one must win, also across chunks."""
    for op, ext in (("argmax", 7), ("argmin", -7)):
        a = np.zeros((4, 60000), dtype=np.int32)
        a[:, [59999, 40000, 33000]] = ext
        a[1, 5] = ext
        t = ctx.tensor(a, "i32")
        out = ctx.new("i64", (4,))
        ctx.submit(op, out, [t], axes=0b10)
        got = ctx.download(out)
        assert got.tolist() == [33000, 5, 33000, 33000], "%s of rows with ties: %s [seed=%s]" % (op, got, seed)
        out = ctx.new("i64", ())
        ctx.submit(op, out, [t])
        assert int(ctx.download(out)) == 33000, "%s over all: %d" % (op, int(ctx.download(out)))


@pytest.mark.parametrize("op,dtype,shape,axis", [("softmax", "f32", (512, 256), -1), ("softmax", "f64", (300, 200), 0),
                                                 ("log_softmax", "bf16", (64, 40, 30), 1),
                                                 ("log_softmax", "f16", (40000, 2), -1)])
def test_large_softmax(ctx, rng, seed, op, dtype, shape, axis):
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, shape), "mixed")
    out = H.make_output(ctx, rng, dtype, shape, "permuted")
    ref, scale = R.softmax(op, dtype, x.values, axis)
    ctx.submit(op, out.tensor, [x.tensor], axis=axis)
    rtol, atol = T.tol(op, dtype, shape[axis])
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what="large %s %s %s axis %d" % (op, dtype, shape, axis),
            seed=seed)


@pytest.mark.parametrize("op,dtype,shape", [("layernorm", "f16", (1024, 128)), ("layernorm", "f32", (64, 4096)),
                                            ("layernorm", "f32", (8, 256)), ("layernorm", "f64", (3, 2049)),
                                            ("rmsnorm", "bf16", (2048, 64)), ("rmsnorm", "f64", (300, 300))])
def test_large_norm(ctx, rng, seed, op, dtype, shape):
    n = shape[-1]
    x = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 0, shape), "negative")
    w = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 1, (n,)), "strided")
    b = H.make_operand(ctx, rng, dtype, H.gen_values(rng, op, dtype, 2, (n,)), "contig")
    out = H.make_output(ctx, rng, dtype, shape, "contig")
    if op == "layernorm":
        ref, scale, _ = R.layernorm(dtype, x.values, w.values, b.values, 1e-5)
        ins = [x.tensor, w.tensor, b.tensor]
    else:
        ref, scale, _ = R.rmsnorm(dtype, x.values, w.values, 1e-5)
        ins = [x.tensor, w.tensor]
    ctx.submit(op, out.tensor, ins, scalar=(1e-5, 0.0))
    rtol, atol = T.tol(op, dtype, n)
    H.check(ctx, out, ref, rtol=rtol, atol=atol, scale=scale, what="large %s %s %s" % (op, dtype, shape), seed=seed)


@pytest.mark.parametrize("dtype,a_shape,b_shape", [("f32", (4, 64, 96), (96, 80)), ("i32", (128, 64), (64, 128)),
                                                   ("bf16", (2, 1, 100, 50), (3, 50, 70)), ("f64", (300, 200), (200,)),
                                                   ("i8", (5000,), (5000, 9)),
                                                   # a few rows, many columns: the GPU splits them by column blocks
                                                   ("f32", (8, 256), (256, 256)), ("i64", (3, 2, 8, 40), (40, 300)),
                                                   # K in several chunks of the few-rows path
                                                   ("f32", (3, 1100), (1100, 65)), ("f64", (8, 700), (700, 100)),
                                                   ("f16", (2, 5, 600), (600, 31))])
def test_large_matmul(ctx, rng, seed, dtype, a_shape, b_shape):
    T.matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, "contig", "contig", "contig", "large")
    T.matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, "permuted", "negative", "strided", "large, views")


# B transposed (x @ W^T) with 16 rows or more: the host executor copies B row-major first
# (host_mm_pack), for every element size; a batched B (one per batch index) is read in place
@pytest.mark.parametrize("dtype,a_shape,b_shape", [("i8", (64, 40), (40, 33)), ("f16", (32, 70), (70, 50)),
                                                   ("f32", (2, 16, 33), (33, 65)), ("f64", (20, 17), (17, 9)),
                                                   ("i64", (3, 16, 8), (3, 8, 5))])
def test_matmul_b_transposed(ctx, rng, seed, dtype, a_shape, b_shape):
    T.matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, "contig", "permuted", "contig", "b transposed")
    T.matmul_once(ctx, rng, seed, dtype, a_shape, b_shape, "strided", "negative", "contig", "b negative")
