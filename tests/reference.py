"""reference - an independent NumPy / Python reference of every gpuos operator (docs/OPERATORS.md).

Nothing here calls gpuos. Values are held as:
  integers and bool   object arrays of Python ints (exact), wrapped to the dtype on store;
  floats              float64 arrays holding the exact value of each (rounded) input.
Where NumPy's semantics differ from the spec (integer division, shifts, saturating casts, pow with
negative integer exponents, f16/bf16 computed in f32) the reference says so explicitly.
"""
import math
from fractions import Fraction

import numpy as np

from gpuos_ctypes import BITS, FLOATS, INTS, SIGNED, STORAGE, bf16_to_f32, f32_to_bf16, to_f64  # noqa: F401

# binary floating formats: significand bits (with the implicit one), min normal exponent, max exponent
FORMAT = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127), "f64": (53, -1022, 1023)}


def int_range(dtype):
    b = BITS[dtype]
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if SIGNED[dtype] else (0, (1 << b) - 1)


def is_float(dtype):
    return dtype in FLOATS


# ---------------------------------------------------------------- values <-> storage
def vals(storage, dtype):
    """Storage array -> reference values (object array of ints, or float64)."""
    a = np.asarray(storage)
    if is_float(dtype):
        return to_f64(a, dtype)
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [int(x) for x in a.reshape(-1)]
    return out


def wrap(values, dtype):
    """Integer values (anything int() accepts) -> storage of an integer dtype, modulo 2**bits; bool: != 0."""
    a = np.asarray(values, dtype=object)
    if dtype == "bool":
        return np.array([bool(x) for x in a.reshape(-1)], dtype=np.bool_).reshape(a.shape)
    b = BITS[dtype]
    m, half = 1 << b, 1 << (b - 1)
    flat = [int(x) % m for x in a.reshape(-1)]
    if SIGNED[dtype]:
        flat = [x - m if x >= half else x for x in flat]
    return np.array(flat, dtype=STORAGE[dtype]).reshape(a.shape)


def round_exact(x, dtype):
    """One rounding, to nearest even, of the exact value x (int, float or Fraction) to a float dtype;
    overflow gives inf. Returns a Python float holding the rounded value."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    if x == 0:
        return math.copysign(0.0, x) if isinstance(x, float) else 0.0
    p, emin, emax = FORMAT[dtype]
    neg = x < 0
    a = abs(Fraction(x))
    e = a.numerator.bit_length() - a.denominator.bit_length()   # 2**e <= a < 2**(e+2)
    if Fraction(2) ** e > a:
        e -= 1
    if Fraction(2) ** (e + 1) <= a:
        e += 1
    q = Fraction(2) ** (max(e, emin) - (p - 1))                 # the quantum at a's exponent
    r = round(a / q) * q                                        # Fraction rounds half to even
    maxf = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    v = math.inf if r > maxf else float(r)
    return -v if neg else v


def float_store_exact(values, dtype):
    """Exact values (float64 array, or object array of ints / Fractions) -> storage of a float dtype,
    rounded once (casts, fill, arange)."""
    a = np.asarray(values)
    if a.dtype != object:
        a = a.astype(np.float64)
        if dtype == "f64":
            return a.copy()
        if dtype in ("f32", "f16"):
            with np.errstate(over="ignore"):
                return a.astype(STORAGE[dtype])   # NumPy's f64->f32 and f64->f16 round once
    flat = [round_exact(x, dtype) for x in a.reshape(-1)]
    f = np.array(flat, dtype=np.float64).reshape(a.shape)
    if dtype == "bf16":
        return f32_to_bf16(f.astype(np.float32))  # exact: f already holds a bf16 value
    return f.astype(STORAGE[dtype])


def float_store_arith(f64, dtype):
    """A float result computed in f64 -> storage: f16 and bf16 are computed in f32 and rounded once
    on store (so: to f32, then to the dtype); f32 rounds once; f64 as is."""
    a = np.asarray(f64, dtype=np.float64)
    if dtype == "f64":
        return a.copy()
    with np.errstate(over="ignore"):
        f32 = a.astype(np.float32)
    if dtype == "f32":
        return f32
    if dtype == "f16":
        with np.errstate(over="ignore"):
            return f32.astype(np.float16)
    return f32_to_bf16(f32)


def store(values, dtype):
    """Arithmetic results -> storage of dtype."""
    if is_float(dtype):
        return float_store_arith(values, dtype)
    if dtype == "bool":
        return np.asarray(values).astype(np.bool_)
    return wrap(values, dtype)


def compute_dtype(dtype):
    """NumPy type of the precision a float dtype computes in (f16, bf16: f32)."""
    return np.float64 if dtype == "f64" else np.float32


# ---------------------------------------------------------------- casts
def cast_value_to_int(x, dst):
    """A float value -> integer dtype: truncate toward zero, saturate, NaN -> 0."""
    lo, hi = int_range(dst)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(int(x), lo), hi)       # int() truncates toward zero


def cast(storage, src, dst):
    """The gpuos_cast of a storage array of src to storage of dst (docs/OPERATORS.md, Casts)."""
    v = vals(storage, src)
    if dst == "bool":
        if is_float(src):
            return (v != 0) | np.isnan(v)
        return np.array([x != 0 for x in v.reshape(-1)], dtype=np.bool_).reshape(v.shape)
    if dst in INTS:
        if is_float(src):
            out = np.empty(v.shape, dtype=object)
            out.reshape(-1)[:] = [cast_value_to_int(float(x), dst) for x in v.reshape(-1)]
            return wrap(out, dst)
        return wrap(v, dst)
    # to a float: one rounding of the exact value
    return float_store_exact(v, dst)


def from_f64(value, dtype):
    """A double converted as a cast from f64 (fill, gpuos_tensor_scalar): storage of shape ()."""
    return cast(np.array(value, dtype=np.float64), "f64", dtype)


# ---------------------------------------------------------------- element-wise
def _objmap(fn, *arrays):
    """Applies fn to Python ints element by element, with NumPy broadcasting; object result."""
    return np.frompyfunc(fn, len(arrays), 1)(*arrays)


def _int_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_pow(a, b, bits):
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if b % 2 else 1
        return 0
    return pow(a, b, 1 << bits)


def _shl(a, b, bits):
    return 0 if b < 0 or b >= bits else a << b


def _shr(a, b, bits):
    if b < 0 or b >= bits:
        return -1 if a < 0 else 0
    return a >> b                          # Python's >> is arithmetic


def _erfc(x):
    return np.asarray(np.frompyfunc(math.erfc, 1, 1)(x), dtype=np.float64)


def _sigmoid(x):
    """1 / (1 + exp(-x)), as exp(x) / (1 + exp(x)) for x < 0 (no overflow: silu and gelu_tanh
    keep their tiny values far below zero)."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x < 0, e / (1.0 + e), 1.0 / (1.0 + e))


FLOAT_UNARY = {
    "neg": lambda a: -a,
    "abs": np.abs,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "rsqrt": lambda a: 1.0 / np.sqrt(a),
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda a: np.where(np.isnan(a), a, np.where(a > 0, a, 0.0)),
    # 1 + erf(a / sqrt 2) as erfc(-a / sqrt 2): no cancellation far below zero (1 + erf is 0 in
    # f64 below -8.3, where gelu is still a normal f32 down to -13)
    "gelu": lambda a: 0.5 * a * _erfc(-a / math.sqrt(2.0)),
    # 0.5 (1 + tanh(z)) = sigmoid(2z), without 1 + tanh(z)'s cancellation for z << 0
    "gelu_tanh": lambda a: a * _sigmoid(2.0 * math.sqrt(2.0 / math.pi) * (a + 0.044715 * a ** 3)),
    "silu": lambda a: a * _sigmoid(a),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "trunc": np.trunc,
    "reciprocal": lambda a: 1.0 / a,
    "square": lambda a: a * a,
}
INT_UNARY = {
    "neg": lambda a: -a,
    "abs": abs,
    "sign": lambda a: (a > 0) - (a < 0),
    "relu": lambda a: a if a > 0 else 0,
    "square": lambda a: a * a,
}
BOOL_OUT_UNARY = {
    "logical_not": lambda v, f: (v == 0) & ~np.isnan(v) if f else _objmap(lambda x: x == 0, v),
    "isnan": lambda v, f: np.isnan(v),
    "isinf": lambda v, f: np.isinf(v),
    "isfinite": lambda v, f: np.isfinite(v),
}
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}
LOGICAL = {"logical_and": lambda x, y: x & y, "logical_or": lambda x, y: x | y,
           "logical_xor": lambda x, y: x ^ y}
FLOAT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": np.power,
    "atan2": np.arctan2,
    "minimum": np.minimum,
    "maximum": np.maximum,
}
INT_BINARY = {
    "add": lambda a, b, n: a + b,
    "sub": lambda a, b, n: a - b,
    "mul": lambda a, b, n: a * b,
    "div": lambda a, b, n: _int_div(a, b),
    "floordiv": lambda a, b, n: 0 if b == 0 else a // b,
    "mod": lambda a, b, n: 0 if b == 0 else a % b,
    "pow": _int_pow,
    "minimum": lambda a, b, n: min(a, b),
    "maximum": lambda a, b, n: max(a, b),
    "bitwise_and": lambda a, b, n: a & b,
    "bitwise_or": lambda a, b, n: a | b,
    "bitwise_xor": lambda a, b, n: a ^ b,
    "shift_left": _shl,
    "shift_right": _shr,
}

TRANSCENDENTAL = {"rsqrt", "exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "tanh",
                  "sigmoid", "gelu", "gelu_tanh", "silu", "pow", "atan2", "softmax", "log_softmax"}


def _truthy(v, dtype):
    if is_float(dtype):
        return (v != 0) | np.isnan(v)
    return np.asarray(_objmap(lambda x: x != 0, v), dtype=bool)


def elementwise(op, dtype, inputs, out_dtype=None, scalar=(0.0, 0.0), out_shape=None):
    """Reference of an element-wise op. inputs: storage arrays (they broadcast); dtype: the key
    dtype (of a, b for where; of the output for fill, arange). Returns (storage, scale) where scale
    is None or an array of magnitudes that the float tolerance is relative to (cancellation)."""
    st = [np.asarray(x) for x in inputs]
    v = [vals(x, dtype if i or op != "where" else "bool") for i, x in enumerate(st)]
    fl = is_float(dtype)
    with np.errstate(all="ignore"):
        if op == "cast":
            return cast(st[0], dtype, out_dtype), None
        if op == "copy":
            return np.broadcast_to(st[0], out_shape).copy(), None
        if op == "fill":
            return np.broadcast_to(from_f64(scalar[0], dtype), out_shape).copy(), None
        if op == "arange":
            n = int(np.prod(out_shape, dtype=np.int64))
            f = np.float64(scalar[0]) + np.arange(n, dtype=np.float64) * np.float64(scalar[1])
            return cast(f, "f64", dtype).reshape(out_shape), None
        if op == "where":
            return np.where(st[0].astype(bool), st[1], st[2]), None
        if op in BOOL_OUT_UNARY:
            return np.asarray(BOOL_OUT_UNARY[op](v[0], fl), dtype=np.bool_), None
        if op == "bitwise_not":
            if dtype == "bool":
                return ~st[0].astype(bool), None
            return wrap(_objmap(lambda x: ~x, v[0]), dtype), None
        if op in CMP:
            if fl:
                return CMP[op](v[0], v[1]), None
            return np.asarray(_objmap(lambda x, y: bool(CMP[op](x, y)), v[0], v[1]), dtype=bool), None
        if op in LOGICAL:
            return LOGICAL[op](_truthy(v[0], dtype), _truthy(v[1], dtype)), None
        if op in ("minimum", "maximum") and dtype == "bool":
            return (np.minimum if op == "minimum" else np.maximum)(st[0], st[1]), None
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor") and dtype == "bool":
            f = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
            return f[op](st[0].astype(bool), st[1].astype(bool)), None
        if not fl:
            bits = BITS[dtype]
            if op in INT_UNARY:
                return wrap(_objmap(INT_UNARY[op], v[0]), dtype), None
            if op in INT_BINARY:
                return wrap(_objmap(lambda x, y: INT_BINARY[op](x, y, bits), v[0], v[1]), dtype), None
            if op == "clamp":
                return wrap(_objmap(lambda x, lo, hi: min(max(x, lo), hi), *v), dtype), None
            if op == "fma":
                return wrap(_objmap(lambda a, b, c: a * b + c, *v), dtype), None
            raise KeyError("no integer reference for %s" % op)
        # floats
        if op in FLOAT_UNARY:
            return float_store_arith(FLOAT_UNARY[op](v[0]), dtype), None
        if op in FLOAT_BINARY:
            return float_store_arith(FLOAT_BINARY[op](v[0], v[1]), dtype), None
        if op in ("floordiv", "mod"):
            # as NumPy floor_divide / remainder (fmod based), in the precision the dtype computes in
            ct = compute_dtype(dtype)
            f = np.floor_divide if op == "floordiv" else np.remainder
            r = f(v[0].astype(ct), v[1].astype(ct)).astype(np.float64)
            return float_store_arith(r, dtype), None
        if op == "clamp":
            return float_store_arith(np.minimum(np.maximum(v[0], v[1]), v[2]), dtype), None
        if op == "lerp":
            a, b, w = v
            return float_store_arith(a + w * (b - a), dtype), np.abs(a) + np.abs(w * b) + np.abs(w * a)
        if op == "fma":
            # fused: the exact a*b+c rounded once to the compute precision (f64; f32 for f32, f16 and
            # bf16), then (f16, bf16) rounded on store as every f16/bf16 result is
            return float_store_arith(fma_compute(dtype, *v), dtype), None
    raise KeyError("no reference for %s on %s" % (op, dtype))


def fma_compute(dtype, a, b, c):
    """fma of float values (float64 arrays holding values of dtype, broadcast) in the precision
    dtype computes in: the exact a*b + c rounded once (f64: to f64; f32, f16, bf16: to f32)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                                  np.asarray(c, dtype=np.float64))
    cd = "f64" if dtype == "f64" else "f32"
    r = [_fma_exact(x, y, z, cd) for x, y, z in zip(a.reshape(-1), b.reshape(-1), c.reshape(-1))]
    return np.array(r, dtype=np.float64).reshape(a.shape)


def _fma_exact(x, y, z, dtype="f64"):
    """fma(x, y, z): the exact x*y + z rounded once to dtype ("f64" or "f32"), with IEEE 754's
    special cases: NaN, inf*0 and inf-inf give NaN; an exact zero is +0 unless both x*y and z
    are zeros of negative sign (round to nearest). math.fma (Python 3.13+) for f64, else the
    exact sum as a Fraction rounded by round_exact."""
    x, y, z = float(x), float(y), float(z)
    if math.isnan(x) or math.isnan(y) or math.isnan(z):
        return math.nan
    if math.isinf(x) or math.isinf(y):
        return x * y + z                  # inf*0, inf + -inf: NaN; else an infinity
    if math.isinf(z):
        return z
    if dtype == "f64" and hasattr(math, "fma"):
        return math.fma(x, y, z)
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        product_negative = (math.copysign(1.0, x) * math.copysign(1.0, y)) < 0
        if (x == 0 or y == 0) and z == 0 and product_negative and math.copysign(1.0, z) < 0:
            return -0.0
        return 0.0
    return round_exact(exact, dtype)


def out_dtype_of(op, dtype, spec_out):
    """The output dtype of op with key dtype (spec column 'out')."""
    if spec_out == "bool":
        return "bool"
    if spec_out == "i64":
        return "i64"
    return dtype


# ---------------------------------------------------------------- reductions
def reduce(op, dtype, storage, axes, keepdim, correction=0):
    """Reference of a reduction over the axes (a tuple of non-negative axes). Returns
    (storage, scale, n) - n the number of elements each output reduces (tolerances grow with it)."""
    st = np.asarray(storage)
    r = st.ndim
    axes = tuple(sorted(set(axes)))
    kept = tuple(i for i in range(r) if i not in axes)
    n = int(np.prod([st.shape[i] for i in axes], dtype=np.int64))
    outer = tuple(st.shape[i] for i in kept)
    x = vals(st, dtype)
    rows = np.transpose(x, kept + axes).reshape(outer + (n,))
    out_shape = tuple(1 if i in axes else st.shape[i] for i in range(r)) if keepdim else outer
    fl = is_float(dtype)
    scale = None
    with np.errstate(all="ignore"):
        if op in ("sum", "prod"):
            if fl:
                res = rows.sum(axis=-1) if op == "sum" else rows.prod(axis=-1)
                scale = np.abs(rows).sum(axis=-1) if op == "sum" else np.abs(res)
            else:
                res = _rowwise(rows, (lambda xs: sum(xs)) if op == "sum" else (lambda xs: math.prod(xs)))
        elif op == "mean":
            res = rows.sum(axis=-1) / n if n else np.full(outer, np.nan)
            scale = np.abs(rows).sum(axis=-1) / max(n, 1)
        elif op in ("min", "max"):
            if fl:
                res = (np.min if op == "min" else np.max)(rows, axis=-1)     # NaN propagates
            else:
                res = _rowwise(rows, min if op == "min" else max)
        elif op in ("argmin", "argmax"):
            res = _argext(rows, op, fl)
        elif op in ("any", "all"):
            t = _truthy(rows, dtype).reshape(rows.shape)
            res = t.any(axis=-1) if op == "any" else t.all(axis=-1)
        elif op == "norm2":
            res = np.sqrt((rows * rows).sum(axis=-1))
            scale = res
        elif op in ("var", "std"):
            mean = rows.sum(axis=-1, keepdims=True) / n if n else np.full(outer + (1,), np.nan)
            ssd = ((rows - mean) ** 2).sum(axis=-1)
            div = max(n - correction, 0)
            res = ssd / div if div else ssd / 0.0          # as NumPy: 0 -> NaN, > 0 -> inf
            if n == 0:
                res = np.full(outer, np.nan)
            scale = (rows * rows).sum(axis=-1) / max(div, 1)
            if op == "std":
                res, scale = np.sqrt(res), np.sqrt(scale)
        else:
            raise KeyError(op)
    out_dt = "i64" if op in ("argmin", "argmax") else "bool" if op in ("any", "all") else dtype
    res = np.asarray(res)
    if out_dt == "bool":
        s = res.astype(np.bool_)
    elif out_dt in INTS:
        s = wrap(res, out_dt)
    else:
        s = float_store_arith(res, out_dt)
    s = s.reshape(out_shape)
    if scale is not None:
        scale = np.asarray(scale, dtype=np.float64).reshape(out_shape)
    return s, scale, n


def _rowwise(rows, fn):
    out = np.empty(rows.shape[:-1], dtype=object)
    flat = rows.reshape(out.size, rows.shape[-1])
    out.reshape(-1)[:] = [fn(list(row)) for row in flat] if flat.shape[0] else []
    return out


def _argext(rows, op, fl):
    flat = rows.reshape(int(np.prod(rows.shape[:-1], dtype=np.int64)), rows.shape[-1])
    res = []
    for row in flat:
        row = list(row)
        if fl:
            nans = [i for i, x in enumerate(row) if math.isnan(x)]
            if nans:
                res.append(nans[0])                 # a NaN counts as the extreme: the first NaN
                continue
        best = 0
        for i, x in enumerate(row):
            if (x < row[best]) if op == "argmin" else (x > row[best]):
                best = i
        res.append(best)
    return np.array(res, dtype=np.int64).reshape(rows.shape[:-1])


# ---------------------------------------------------------------- matmul, row-wise
def matmul(dtype, a_st, b_st):
    """(storage, scale, k) of NumPy matmul with gpuos' accumulation rules."""
    a, b = vals(a_st, dtype), vals(b_st, dtype)
    k = a.shape[-1]
    if is_float(dtype):
        with np.errstate(all="ignore"):
            if np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
                res = np.matmul(a, b)
            else:   # NaN, inf: IEEE products and sums (inf*0 is NaN), not whatever BLAS skips
                res = _matmul_ieee(a, b)
            scale = np.matmul(np.abs(a), np.abs(b))
        return float_store_arith(res, dtype), np.asarray(scale), k
    # object matmul of Python ints; an empty K sums to 0
    shape = np.matmul(np.zeros(a.shape, dtype=np.int8), np.zeros(b.shape, dtype=np.int8)).shape
    res = np.matmul(a, b) if k else np.zeros(shape, dtype=np.int64)
    return wrap(np.asarray(res, dtype=object).reshape(shape), dtype), None, k


def _matmul_ieee(a, b):
    """NumPy matmul of float64 arrays as element products summed: every product a[i,k]*b[k,j] is
    formed (inf*0 gives NaN) and summed (inf + -inf gives NaN) as IEEE 754 says."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    res = (a2[..., :, :, None] * b2[..., None, :, :]).sum(axis=-2)
    if a.ndim == 1:
        res = res[..., 0, :]
    if b.ndim == 1:
        res = res[..., 0]
    return res


def softmax(op, dtype, st, axis):
    x = vals(st, dtype)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True) if x.shape[axis] else x
        e = np.exp(x - m)
        s = e.sum(axis=axis, keepdims=True)
        if op == "softmax":
            return float_store_arith(e / s, dtype), None
        lse = np.log(s)
        # the log of the sum (at least 1) is known to ~eps absolute however small it is (its
        # argument's rounding, ~eps * s, over s): a unit term in the scale (seed 1612471827:
        # lse ~1.5e-4 from s = 1.00015, off by 3.8e-8 = 0.3 ulp of s)
        return float_store_arith(x - m - lse, dtype), np.abs(x) + np.abs(m) + np.abs(lse) + 1.0


def layernorm(dtype, x_st, w_st, b_st, eps):
    x = vals(x_st, dtype)
    n = x.shape[-1]
    with np.errstate(all="ignore"):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        inv = 1.0 / np.sqrt(var + eps)
        xh = (x - mean) * inv
        y, scale = xh, (np.abs(x) + np.abs(mean)) * inv
        if w_st is not None:
            w = vals(w_st, dtype)
            y, scale = y * w, scale * np.abs(w)
        if b_st is not None:
            b = vals(b_st, dtype)
            y, scale = y + b, scale + np.abs(b)
    return float_store_arith(y, dtype), scale, n


def rmsnorm(dtype, x_st, w_st, eps):
    x = vals(x_st, dtype)
    n = x.shape[-1]
    with np.errstate(all="ignore"):
        inv = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        y = x * inv
        scale = np.abs(y)
        if w_st is not None:
            w = vals(w_st, dtype)
            y, scale = y * w, scale * np.abs(w)
    return float_store_arith(y, dtype), scale, n


# ---------------------------------------------------------------- comparison
# Ops that pick one of their operands: where a +0 and a -0 tie as the extreme, docs/OPERATORS.md
# does not say which one is returned, so either sign of that zero is accepted (sign_free below).
ZERO_TIE_OPS = {"minimum", "maximum", "clamp", "min", "max"}


def _zero_signs(v):
    z = (v == 0)
    return z & np.signbit(v), z & ~np.signbit(v)


def ew_sign_free(op, dtype, inputs, out_shape=None):
    """Where an element-wise op's zero result may have either sign (a tie of +0 and -0 among the
    operands of minimum, maximum, clamp); None for every other op (the sign is exact)."""
    if op not in ZERO_TIE_OPS or not is_float(dtype) or not inputs:
        return None
    v = np.broadcast_arrays(*[vals(x, dtype) for x in inputs])
    neg = np.zeros(v[0].shape, dtype=bool)
    pos = np.zeros(v[0].shape, dtype=bool)
    for x in v:
        n, p = _zero_signs(x)
        neg |= n
        pos |= p
    free = neg & pos
    return free if out_shape is None else np.broadcast_to(free, out_shape)


def reduce_sign_free(op, dtype, storage, axes, keepdim):
    """Where a min/max reduction's zero result may have either sign (its row holds +0 and -0)."""
    if op not in ZERO_TIE_OPS or not is_float(dtype):
        return None
    v = vals(np.asarray(storage), dtype)
    axes = tuple(sorted(set(axes)))
    n, p = _zero_signs(v)
    return np.asarray(n.any(axis=axes, keepdims=bool(keepdim)) & p.any(axis=axes, keepdims=bool(keepdim)))


def mismatches(got, ref, dtype, rtol=0.0, atol=0.0, scale=None, acc=0.0, sign_free=None):
    """Flat indices where got differs from ref: integers and bool exactly; floats within
    atol + rtol * max(|ref|, scale), or with acc (sums of terms: test_ops.acc_tol) within
    atol + rtol * |ref| + acc * max(|ref|, scale); NaN equal to NaN, infinities exact. With
    rtol = atol = acc = 0 (exact) a zero must also have the reference's sign (-0.0 is not +0.0),
    except where sign_free (a mask broadcast to ref's shape) is true."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        raise AssertionError("shape %s != reference shape %s" % (got.shape, ref.shape))
    if dtype == "bool":  # the stored bytes: a bool is 0 or 1, and NumPy would take any nonzero byte as True
        return np.flatnonzero(got.reshape(-1).view(np.uint8) != ref.reshape(-1).astype(np.uint8))
    if not is_float(dtype):
        return np.flatnonzero(got.reshape(-1) != ref.reshape(-1))
    g, r = to_f64(got, dtype).reshape(-1), to_f64(ref, dtype).reshape(-1)
    mag = np.abs(r)
    if scale is not None:
        s = np.broadcast_to(np.asarray(scale, dtype=np.float64), ref.shape).reshape(-1)
        mag = np.maximum(mag, np.where(np.isfinite(s), s, 0.0))
    with np.errstate(all="ignore"):
        close = np.abs(g - r) <= (atol + rtol * np.abs(r) + acc * mag if acc else atol + rtol * mag)
    nan = np.isnan(g) & np.isnan(r)
    inf = (np.isinf(g) | np.isinf(r))
    ok = nan | np.where(inf, g == r, close & ~np.isnan(g) & ~np.isnan(r))
    if rtol == 0 and atol == 0 and not acc:
        # exact: -0.0 and +0.0 compare equal as numbers, but an exact result has one sign
        signed = (g == 0) & (r == 0)
        if sign_free is not None:
            signed &= ~np.broadcast_to(np.asarray(sign_free, dtype=bool), ref.shape).reshape(-1)
        ok &= ~signed | (np.signbit(g) == np.signbit(r))
    return np.flatnonzero(~ok)


def show(storage, dtype):
    """Printable values of a storage array (bf16 as floats)."""
    a = np.asarray(storage)
    if dtype == "bf16":
        return bf16_to_f32(a)
    return a
