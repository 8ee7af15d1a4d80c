"""gen/ops.py - the dtypes and operators of gpuos, as data for gen/gen.py.

docs/OPERATORS.md is the contract; this file says the same thing in a form the generator
can use, and nothing else. Dtype and op ids are ABI: never renumber, only append.

Expressions (element functions and reduction steps) are C text with these rules:
  - operands are named as the op's inputs (a, b, cond, x, lo, hi, w, c); reduction steps
    see acc (accumulator), x (the element, compute type), j (its flat inner index),
    a and b (merge: a covers earlier indices than b), n and corr (final).
  - $T the compute type, $W the unsigned type integer arithmetic runs in (uint32_t up
    to 32 bits, else uint64_t: no signed overflow, no promotion to int), $C the helper
    key (dtype name for integers and bool, f32 for float compute, f64 for double),
    $BITS, $MIN, $MAX the integer limits as C literals, $ACC the accumulator type.
  - math functions use the libm double names (sqrt, exp, erf, ...) and float literals
    are written with a dot (0.5); for float compute the generator emits sqrtf, 0.5f.
  - a text containing ';' is a function body (with return), otherwise an expression.
Expressions are given per dtype class: 'bool', 'sint', 'uint', 'float'; the key 'int'
stands for sint and uint, 'any' for every class.
"""
import re
from dataclasses import dataclass, field


# ---------------------------------------------------------------- dtypes
@dataclass(frozen=True)
class Dtype:
    id: int
    name: str
    ctype: str     # C storage type
    cls: str       # bool, sint, uint, float
    bits: int
    numpy: str     # NumPy name ('' when NumPy has none)
    compute: str   # C type element functions work on
    unsigned: str  # unsigned type of the same width (integers and bool; '' for floats)

    @property
    def enum(self):
        return 'GPUOS_' + self.name.upper()

    @property
    def size(self):
        return self.bits // 8

    @property
    def is_int(self):
        return self.cls in ('sint', 'uint')

    @property
    def is_float(self):
        return self.cls == 'float'

    @property
    def is_half(self):
        """A float stored as bits of another type (f16, bf16: uint16_t) and computed in float:
        loads and stores call gpuos__<name>_to_f32 / gpuos__f32_to_<name> / gpuos__f64_to_<name>."""
        return self.is_float and self.ctype != self.compute

    @property
    def wide(self):
        """Unsigned type integer arithmetic is done in ('' for floats)."""
        if self.is_float:
            return ''
        return 'uint32_t' if self.bits <= 32 else 'uint64_t'

    @property
    def key(self):
        """Helper-function key: what the compute type is (f16, bf16 and f32 share f32)."""
        if self.is_float:
            return 'f64' if self.compute == 'double' else 'f32'
        return self.name

    @property
    def limits(self):
        """(min, max) of an integer dtype."""
        if self.cls == 'sint':
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if self.cls == 'uint':
            return 0, (1 << self.bits) - 1
        if self.cls == 'bool':
            return 0, 1
        return None


DTYPES = [
    Dtype(0, 'bool', 'uint8_t', 'bool', 8, 'bool_', 'uint8_t', 'uint8_t'),
    Dtype(1, 'i8', 'int8_t', 'sint', 8, 'int8', 'int8_t', 'uint8_t'),
    Dtype(2, 'u8', 'uint8_t', 'uint', 8, 'uint8', 'uint8_t', 'uint8_t'),
    Dtype(3, 'i16', 'int16_t', 'sint', 16, 'int16', 'int16_t', 'uint16_t'),
    Dtype(4, 'i32', 'int32_t', 'sint', 32, 'int32', 'int32_t', 'uint32_t'),
    Dtype(5, 'i64', 'int64_t', 'sint', 64, 'int64', 'int64_t', 'uint64_t'),
    Dtype(6, 'f16', 'uint16_t', 'float', 16, 'float16', 'float', ''),
    Dtype(7, 'bf16', 'uint16_t', 'float', 16, '', 'float', ''),
    Dtype(8, 'f32', 'float', 'float', 32, 'float32', 'float', ''),
    Dtype(9, 'f64', 'double', 'float', 64, 'float64', 'double', ''),
]
DTYPE = {d.name: d for d in DTYPES}

# Dtype sets of the operators below, by class: a new dtype joins every set of its class.
ALL = tuple(d.name for d in DTYPES)
NUM = tuple(d.name for d in DTYPES if d.cls != 'bool')
INT = tuple(d.name for d in DTYPES if d.is_int)
INTB = ('bool',) + INT
FLT = tuple(d.name for d in DTYPES if d.is_float)


# ---------------------------------------------------------------- operators
@dataclass(frozen=True)
class Reduce:
    """A reduction as step functions over an accumulator (see the module comment)."""
    acc: object   # C type text, or a tuple of (field, type) pairs for a struct
    init: str
    step: str
    merge: str
    final: str


@dataclass(frozen=True)
class Op:
    id: int
    name: str
    kind: str     # unary binary ternary cast copy fill arange reduce rows matmul
    inputs: tuple  # input names in gpuos_task.in order; a trailing '?' marks optional
    dtypes: tuple  # key dtypes the op is defined for
    out: str      # same, bool, i64, any
    doc: str      # one line, for gpuos.h
    expr: dict = field(default_factory=dict)  # element-wise: class -> expression
    reduce: dict = field(default_factory=dict)  # reductions: class -> Reduce
    raw: bool = False  # element function works on the storage type (no f16/bf16 conversion)
    min_rank: int = 0  # lowest operand rank the op accepts

    @property
    def enum(self):
        return 'GPUOS_OP_' + self.name.upper()

    @property
    def plan(self):
        """Which plan (src/gpuos_plan.h) the runtime builds: ew, reduce, rows, matmul."""
        return {'reduce': 'reduce', 'rows': 'rows', 'matmul': 'matmul'}.get(self.kind, 'ew')

    @property
    def in_names(self):
        return tuple(n.rstrip('?') for n in self.inputs)

    @property
    def n_in(self):
        return sum(1 for n in self.inputs if not n.endswith('?'))

    @property
    def n_in_max(self):
        return len(self.inputs)

    @property
    def key_input(self):
        """Index of the input whose dtype selects the code; None: the output's (fill, arange)."""
        if not self.inputs:
            return None
        return 1 if self.name == 'where' else 0

    @property
    def bool_input0(self):
        return self.name == 'where'

    @property
    def n_scalars(self):
        """gpuos_task.scalar[0..n) the op reads: fill's value, arange's start and step, the norms' eps."""
        return {'fill': 1, 'arange': 2}.get(self.kind, 1 if self.name in ('layernorm', 'rmsnorm') else 0)

    @property
    def inplace_ok(self):
        return bool(self.inputs) and self.plan in ('ew', 'rows')

    def expr_for(self, d):
        """The expression of this op for dtype d (element-wise ops)."""
        return _by_class(self.expr, d.cls, self.name)

    def reduce_for(self, d):
        return _by_class(self.reduce, d.cls, self.name)


def _by_class(table, cls, what):
    for k in (cls, 'int' if cls in ('sint', 'uint') else None, 'any'):
        if k is not None and k in table:
            return table[k]
    raise KeyError('%s has no expression for class %s' % (what, cls))


def _wrap(op):
    """Integer a OP b computed in $W, so that it wraps instead of overflowing."""
    return '($T)(($W)a %s ($W)b)' % op


def _cmp(op):
    return {'any': '(uint8_t)(a %s b)' % op}


def _fn(name):
    return {'float': '%s(a)' % name}


U, B, T, E = 'unary', 'binary', 'ternary', 'ew'
OPS = [
    # ---- unary element-wise
    Op(0, 'neg', U, ('a',), NUM, 'same', '-a (unsigned wraps)',
       {'int': '($T)(($W)0 - ($W)a)', 'float': '-a'}),
    Op(1, 'abs', U, ('a',), NUM, 'same', '|a| (INT_MIN stays INT_MIN)',
       {'sint': 'a < 0 ? ($T)(($W)0 - ($W)a) : a', 'uint': 'a', 'float': 'fabs(a)'}),
    Op(2, 'sign', U, ('a',), NUM, 'same', '-1, 0 or 1 (NaN gives NaN)',
       {'sint': '($T)((a > 0) - (a < 0))', 'uint': '($T)(a > 0)',
        'float': 'a > 0 ? 1.0 : (a < 0 ? -1.0 : (a == 0 ? 0.0 : a))'}),
    Op(3, 'sqrt', U, ('a',), FLT, 'same', 'square root', _fn('sqrt')),
    Op(4, 'rsqrt', U, ('a',), FLT, 'same', '1/sqrt(a)', {'float': '1.0 / sqrt(a)'}),
    Op(5, 'exp', U, ('a',), FLT, 'same', 'e^a', _fn('exp')),
    Op(6, 'exp2', U, ('a',), FLT, 'same', '2^a', _fn('exp2')),
    Op(7, 'log', U, ('a',), FLT, 'same', 'natural logarithm', _fn('log')),
    Op(8, 'log2', U, ('a',), FLT, 'same', 'base-2 logarithm', _fn('log2')),
    Op(9, 'log1p', U, ('a',), FLT, 'same', 'log(1 + a)', _fn('log1p')),
    Op(10, 'expm1', U, ('a',), FLT, 'same', 'exp(a) - 1', _fn('expm1')),
    Op(11, 'sin', U, ('a',), FLT, 'same', 'sine', _fn('sin')),
    Op(12, 'cos', U, ('a',), FLT, 'same', 'cosine', _fn('cos')),
    Op(13, 'tan', U, ('a',), FLT, 'same', 'tangent', _fn('tan')),
    Op(14, 'tanh', U, ('a',), FLT, 'same', 'hyperbolic tangent', _fn('tanh')),
    # for a < 0 as exp(a) / (1 + exp(a)), like silu below: exp never overflows (the first form
    # gave 0 in f32 below -88.7, where the true value is still a subnormal down to ~-103)
    Op(15, 'sigmoid', U, ('a',), FLT, 'same', '1/(1+exp(-a))',
       {'float': 'const $T t = exp(-fabs(a)); return (a < 0 ? t : 1.0) / (1.0 + t);'}),
    Op(16, 'relu', U, ('a',), NUM, 'same', 'a > 0 ? a : 0 (NaN gives NaN)',
       {'sint': 'a > 0 ? a : 0', 'uint': 'a', 'float': '(a > 0 || a != a) ? a : 0.0'}),
    Op(17, 'gelu', U, ('a',), FLT, 'same', '0.5 a (1 + erf(a/sqrt 2))',
       # = 1 + erf(.), without cancellation; gpuos__gelu_erfc_float/_double: gpuos_elem.h
       {'float': '0.5 * a * gpuos__gelu_erfc_$T(a)'}),
    Op(18, 'gelu_tanh', U, ('a',), FLT, 'same', '0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))',
       # 0.5 (1 + tanh(z)) = 1 / (1 + exp(-2z)): no cancellation for a << 0; for 2z < 0 as
       # exp(2z) / (1 + exp(2z)), so exp never overflows (a / inf gave -0 below a ~ -10.06)
       {'float': 'const $T z = 1.59576912160573071176 * (a + 0.044715 * a * a * a); const $T t = exp(-fabs(z)); '
                 'return a * (z < 0 ? t : 1.0) / (1.0 + t);'}),
    # a / (1 + exp(-a)), for a < 0 as a exp(a) / (1 + exp(a)): exp never overflows (the first
    # form gave -0 in f32 for a below -88.7, where the true value is still ~1e-37); a >= 0 as before
    Op(19, 'silu', U, ('a',), FLT, 'same', 'a * sigmoid(a)',
       {'float': 'const $T t = exp(-fabs(a)); return a * (a < 0 ? t : 1.0) / (1.0 + t);'}),
    Op(20, 'floor', U, ('a',), FLT, 'same', 'round down', _fn('floor')),
    Op(21, 'ceil', U, ('a',), FLT, 'same', 'round up', _fn('ceil')),
    Op(22, 'round', U, ('a',), FLT, 'same', 'round to nearest, ties to even', _fn('rint')),
    Op(23, 'trunc', U, ('a',), FLT, 'same', 'round toward zero', _fn('trunc')),
    Op(24, 'reciprocal', U, ('a',), FLT, 'same', '1/a', {'float': '1.0 / a'}),
    Op(25, 'square', U, ('a',), NUM, 'same', 'a*a (integers wrap)',
       {'int': '($T)(($W)a * ($W)a)', 'float': 'a * a'}),
    Op(26, 'logical_not', U, ('a',), ALL, 'bool', 'a == 0', {'any': '(uint8_t)(a == 0)'}),
    Op(27, 'bitwise_not', U, ('a',), INTB, 'same', '~a (bool: !a)',
       {'bool': '(uint8_t)!a', 'int': '($T)~a'}),
    Op(28, 'isnan', U, ('a',), FLT, 'bool', 'a is NaN', {'float': '(uint8_t)(a != a)'}),
    Op(29, 'isinf', U, ('a',), FLT, 'bool', 'a is +inf or -inf',
       {'float': '(uint8_t)(a == a && a - a != a - a)'}),
    Op(30, 'isfinite', U, ('a',), FLT, 'bool', 'a is neither inf nor NaN',
       {'float': '(uint8_t)(a - a == a - a)'}),
    # ---- binary element-wise
    Op(31, 'add', B, ('a', 'b'), NUM, 'same', 'a+b', {'int': _wrap('+'), 'float': 'a + b'}),
    Op(32, 'sub', B, ('a', 'b'), NUM, 'same', 'a-b', {'int': _wrap('-'), 'float': 'a - b'}),
    Op(33, 'mul', B, ('a', 'b'), NUM, 'same', 'a*b', {'int': _wrap('*'), 'float': 'a * b'}),
    Op(34, 'div', B, ('a', 'b'), NUM, 'same', 'a/b (integers: toward zero, b == 0 gives 0)',
       {'int': 'gpuos__div_$C(a, b)', 'float': 'a / b'}),
    Op(35, 'floordiv', B, ('a', 'b'), NUM, 'same', 'floor(a/b) (integers: b == 0 gives 0)',
       {'any': 'gpuos__floordiv_$C(a, b)'}),
    Op(36, 'mod', B, ('a', 'b'), NUM, 'same', 'remainder with the sign of b (integers: b == 0 gives 0)',
       {'any': 'gpuos__mod_$C(a, b)'}),
    Op(37, 'pow', B, ('a', 'b'), NUM, 'same', 'a^b (integers: exact, wrapping; b < 0 gives 0 unless |a| == 1)',
       {'int': 'gpuos__pow_$C(a, b)', 'float': 'pow(a, b)'}),
    Op(38, 'atan2', B, ('a', 'b'), FLT, 'same', 'atan2(a, b)', {'float': 'atan2(a, b)'}),
    Op(39, 'minimum', B, ('a', 'b'), ALL, 'same', 'element-wise minimum (NaN if either is NaN)',
       {'any': 'gpuos__min_$C(a, b)'}),
    Op(40, 'maximum', B, ('a', 'b'), ALL, 'same', 'element-wise maximum (NaN if either is NaN)',
       {'any': 'gpuos__max_$C(a, b)'}),
    Op(41, 'eq', B, ('a', 'b'), ALL, 'bool', 'a == b', _cmp('==')),
    Op(42, 'ne', B, ('a', 'b'), ALL, 'bool', 'a != b', _cmp('!=')),
    Op(43, 'lt', B, ('a', 'b'), ALL, 'bool', 'a < b', _cmp('<')),
    Op(44, 'le', B, ('a', 'b'), ALL, 'bool', 'a <= b', _cmp('<=')),
    Op(45, 'gt', B, ('a', 'b'), ALL, 'bool', 'a > b', _cmp('>')),
    Op(46, 'ge', B, ('a', 'b'), ALL, 'bool', 'a >= b', _cmp('>=')),
    Op(47, 'logical_and', B, ('a', 'b'), ALL, 'bool', '(a != 0) && (b != 0)',
       {'any': '(uint8_t)(a != 0 && b != 0)'}),
    Op(48, 'logical_or', B, ('a', 'b'), ALL, 'bool', '(a != 0) || (b != 0)',
       {'any': '(uint8_t)(a != 0 || b != 0)'}),
    Op(49, 'logical_xor', B, ('a', 'b'), ALL, 'bool', '(a != 0) != (b != 0)',
       {'any': '(uint8_t)((a != 0) != (b != 0))'}),
    Op(50, 'bitwise_and', B, ('a', 'b'), INTB, 'same', 'a & b', {'any': '($T)(a & b)'}),
    Op(51, 'bitwise_or', B, ('a', 'b'), INTB, 'same', 'a | b', {'any': '($T)(a | b)'}),
    Op(52, 'bitwise_xor', B, ('a', 'b'), INTB, 'same', 'a ^ b', {'any': '($T)(a ^ b)'}),
    Op(53, 'shift_left', B, ('a', 'b'), INT, 'same', 'a << b (b < 0 or b >= bits gives 0)',
       {'int': 'gpuos__shl_$C(a, b)'}),
    Op(54, 'shift_right', B, ('a', 'b'), INT, 'same', 'a >> b, arithmetic for signed (b out of range: 0 or -1)',
       {'int': 'gpuos__shr_$C(a, b)'}),
    # ---- ternary element-wise
    Op(55, 'where', T, ('cond', 'a', 'b'), ALL, 'same', 'cond ? a : b (cond is bool)',
       {'any': 'cond ? a : b'}, raw=True),
    Op(56, 'clamp', T, ('x', 'lo', 'hi'), NUM, 'same', 'min(max(x, lo), hi), NaN propagating',
       {'any': 'gpuos__min_$C(gpuos__max_$C(x, lo), hi)'}),
    # fused: same as a + w*(b-a) for every inf/NaN, but w*(b-a) cannot overflow on its own
    Op(57, 'lerp', T, ('a', 'b', 'w'), FLT, 'same', 'a + w*(b-a), fused: fma(w, b-a, a)', {'float': 'fma(w, b - a, a)'}),
    Op(58, 'fma', T, ('a', 'b', 'c'), NUM, 'same', 'a*b + c (floats: fused; integers wrap)',
       {'int': '($T)(($W)a * ($W)b + ($W)c)', 'float': 'fma(a, b, c)'}),
    # ---- other element-wise
    Op(59, 'cast', 'cast', ('a',), ALL, 'any', "a converted to out's dtype"),
    Op(60, 'copy', 'copy', ('a',), ALL, 'same', "a broadcast to out's shape", {'any': 'a'}, raw=True),
    Op(61, 'fill', 'fill', (), ALL, 'same', 'every element = value (converted as a cast from f64)'),
    Op(62, 'arange', 'arange', (), NUM, 'same', 'element i (row-major) = start + i*step, in f64, then cast'),
]

# ---- reductions: accumulators and step functions
_ARG_STRUCT = (('v', '$T'), ('i', 'int64_t'))
_WELFORD = (('n', 'int64_t'), ('mean', '$T'), ('m2', '$T'))
_WELFORD_STEP = ('$T d = x - acc.mean; acc.n += 1; acc.mean += d / ($T)acc.n; '
                 'acc.m2 += d * (x - acc.mean); return acc;')
_WELFORD_MERGE = ('$ACC r; $T d, fb; if (a.n == 0) return b; if (b.n == 0) return a; '
                  'r.n = a.n + b.n; d = b.mean - a.mean; fb = ($T)b.n / ($T)r.n; '
                  'r.mean = a.mean + d * fb; r.m2 = a.m2 + b.m2 + d * d * ($T)a.n * fb; return r;')


def _arg(better):
    """argmin/argmax: first index of the best value; a NaN beats everything (first NaN)."""
    return {
        'float': Reduce(
            _ARG_STRUCT, '$ACC r; r.v = 0; r.i = -1; return r;',
            'if (acc.i < 0 || (acc.v == acc.v && (x != x || x %s acc.v))) { acc.v = x; acc.i = j; } '
            'return acc;' % better,
            'if (a.i < 0) return b; if (b.i < 0) return a; '
            'if (a.v != a.v) return (b.v != b.v && b.i < a.i) ? b : a; if (b.v != b.v) return b; '
            'if (b.v %s a.v || (b.v == a.v && b.i < a.i)) return b; return a;' % better,
            'acc.i'),
        'any': Reduce(
            _ARG_STRUCT, '$ACC r; r.v = 0; r.i = -1; return r;',
            'if (acc.i < 0 || x %s acc.v) { acc.v = x; acc.i = j; } return acc;' % better,
            'if (a.i < 0) return b; if (b.i < 0) return a; '
            'if (b.v %s a.v || (b.v == a.v && b.i < a.i)) return b; return a;' % better,
            'acc.i'),
    }


def _extreme(which, float_init, int_init, bool_init):
    step = 'gpuos__%s_$C(acc, x)' % which
    merge = 'gpuos__%s_$C(a, b)' % which
    return {'float': Reduce('$T', float_init, step, merge, 'acc'),
            'int': Reduce('$T', int_init, step, merge, 'acc'),
            'bool': Reduce('$T', bool_init, step, merge, 'acc')}


R = 'reduce'
OPS += [
    Op(63, 'sum', R, ('a',), NUM, 'same', 'sum (integers wrap)', reduce={
        'int': Reduce('uint64_t', '0', 'acc + (uint64_t)x', 'a + b', '($T)acc'),
        'float': Reduce('$T', '0.0', 'acc + x', 'a + b', 'acc')}),
    Op(64, 'prod', R, ('a',), NUM, 'same', 'product (integers wrap)', reduce={
        'int': Reduce('uint64_t', '1', 'acc * (uint64_t)x', 'a * b', '($T)acc'),
        'float': Reduce('$T', '1.0', 'acc * x', 'a * b', 'acc')}),
    Op(65, 'mean', R, ('a',), FLT, 'same', 'sum / N (NaN over zero elements)', reduce={
        'float': Reduce('$T', '0.0', 'acc + x', 'a + b', 'acc / ($T)n')}),
    Op(66, 'min', R, ('a',), ALL, 'same', 'minimum (NaN propagates)',
       reduce=_extreme('min', 'gpuos__inf_$C()', '$MAX', '1')),
    Op(67, 'max', R, ('a',), ALL, 'same', 'maximum (NaN propagates)',
       reduce=_extreme('max', '-gpuos__inf_$C()', '$MIN', '0')),
    Op(68, 'argmin', R, ('a',), ALL, 'i64', 'flat index of the first minimum (first NaN)',
       reduce=_arg('<')),
    Op(69, 'argmax', R, ('a',), ALL, 'i64', 'flat index of the first maximum (first NaN)',
       reduce=_arg('>')),
    Op(70, 'any', R, ('a',), ALL, 'bool', 'any element != 0', reduce={
        'any': Reduce('uint8_t', '0', '(uint8_t)(acc | (x != 0))', '(uint8_t)(a | b)', 'acc')}),
    Op(71, 'all', R, ('a',), ALL, 'bool', 'every element != 0', reduce={
        'any': Reduce('uint8_t', '1', '(uint8_t)(acc & (x != 0))', '(uint8_t)(a & b)', 'acc')}),
    Op(72, 'norm2', R, ('a',), FLT, 'same', 'sqrt(sum a^2)', reduce={
        'float': Reduce('$T', '0.0', 'acc + x * x', 'a + b', 'sqrt(acc)')}),
    Op(73, 'var', R, ('a',), FLT, 'same', 'sum (a - mean)^2 / (N - correction)', reduce={
        'float': Reduce(_WELFORD, '$ACC r; r.n = 0; r.mean = 0.0; r.m2 = 0.0; return r;',
                        _WELFORD_STEP, _WELFORD_MERGE, 'gpuos__var_final_$C(acc.m2, acc.n, corr)')}),
    Op(74, 'std', R, ('a',), FLT, 'same', 'sqrt(var)', reduce={
        'float': Reduce(_WELFORD, '$ACC r; r.n = 0; r.mean = 0.0; r.m2 = 0.0; return r;',
                        _WELFORD_STEP, _WELFORD_MERGE, 'sqrt(gpuos__var_final_$C(acc.m2, acc.n, corr))')}),
    # ---- matrix, row-wise, normalisation (kernels written in the templates)
    Op(75, 'matmul', 'matmul', ('a', 'b'), NUM, 'same', 'NumPy matmul (batch axes broadcast)', min_rank=1),
    Op(76, 'softmax', 'rows', ('a',), FLT, 'same', 'exp(a - max) / sum along axis', min_rank=1),
    Op(77, 'log_softmax', 'rows', ('a',), FLT, 'same', 'a - max - log(sum exp(a - max)) along axis',
       min_rank=1),
    Op(78, 'layernorm', 'rows', ('x', 'weight?', 'bias?'), FLT, 'same',
       '(x - mean) / sqrt(var + eps) * weight + bias over the last axis', min_rank=1),
    Op(79, 'rmsnorm', 'rows', ('x', 'weight?'), FLT, 'same',
       'x / sqrt(mean(x^2) + eps) * weight over the last axis', min_rank=1),
]

OP = {o.name: o for o in OPS}

# Element-wise operators that a recorded graph may fuse into a matmul as its epilogue
# (src/graph.c; gpuos__matmul_plan.epi): in-place on the product's output, no scalars,
# output dtype that of the input. Ids are below 256 (GPUOS__EPI_OP).
EPILOGUE = ('add', 'sub', 'mul', 'maximum', 'minimum', 'relu', 'gelu', 'gelu_tanh', 'silu', 'sigmoid', 'tanh')



# ---------------------------------------------------------------- checks (gen.py fails on import)
def _check():
    """Mistakes an edit of this file can make; ids are ABI (append only, never reuse)."""
    errors = []

    def dense(kind, items):
        for i, x in enumerate(items):
            if x.id != i:
                errors.append('%s %s has id %d where %d belongs: ids are 0, 1, 2, ... in list order, '
                              'never reused (append with the next free id)' % (kind, x.name, x.id, i))
                break
        names = [x.name for x in items]
        for n in sorted({n for n in names if names.count(n) > 1}):
            errors.append('%s name %r is used twice' % (kind, n))
        for n in names:
            if not re.fullmatch(r'[a-z][a-z0-9_]*', n):
                errors.append('%s name %r is not a lower-case C identifier' % (kind, n))
    dense('dtype', DTYPES)
    if len(DTYPES) > 32:
        errors.append('%d dtypes: dtype masks are uint32_t (gpuos__op_info.dtypes)' % len(DTYPES))
    for d in DTYPES:
        where = 'dtype %s: ' % d.name
        if d.cls not in ('bool', 'sint', 'uint', 'float'):
            errors.append(where + 'cls %r is not bool, sint, uint or float' % d.cls)
        if d.bits not in (8, 16, 32, 64):
            errors.append(where + 'bits %r is not 8, 16, 32 or 64' % d.bits)
        if d.is_float:
            if d.compute not in ('float', 'double') or d.unsigned:
                errors.append(where + "a float computes in float or double and has unsigned ''")
            if d.is_half and d.ctype != 'uint%d_t' % d.bits:
                errors.append(where + 'a float stored as bits has ctype uint%d_t' % d.bits)
            if not d.is_half and d.ctype != d.compute:
                errors.append(where + 'ctype %s differs from compute %s' % (d.ctype, d.compute))
        else:
            want = {'bool': 'uint8_t', 'sint': 'int%d_t' % d.bits, 'uint': 'uint%d_t' % d.bits}.get(d.cls)
            if d.ctype != want or d.compute != want or d.unsigned != 'uint%d_t' % d.bits:
                errors.append(where + 'ctype and compute must be %s, unsigned uint%d_t' % (want, d.bits))
    if errors:  # the operator checks below would only repeat these
        raise SystemExit('gen/ops.py:\n  ' + '\n  '.join(errors))
    dense('op', OPS)
    for o in OPS:
        bad = [n for n in o.dtypes if n not in DTYPE]
        if bad:
            errors.append('op %s: unknown dtypes %s' % (o.name, bad))
        if len(set(o.dtypes)) != len(o.dtypes):
            errors.append('op %s: a dtype is listed twice' % o.name)
        for n in o.dtypes:  # every element-wise expression / reduction covers the op's classes
            if n not in DTYPE:
                continue
            try:
                if o.expr:
                    o.expr_for(DTYPE[n])
                if o.reduce:
                    o.reduce_for(DTYPE[n])
            except KeyError as e:
                errors.append(str(e).strip("'"))
    for n in EPILOGUE:
        if n not in OP or not (OP[n].kind in ('unary', 'binary') and OP[n].out == 'same' and OP[n].id < 256):
            errors.append('EPILOGUE: %s must be a unary or binary op of output dtype same, id < 256' % n)
    if errors:
        raise SystemExit('gen/ops.py:\n  ' + '\n  '.join(dict.fromkeys(errors)))


_check()
