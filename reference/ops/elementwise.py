"""Reference elementwise ops: arithmetic, comparisons, logic, unary maps and selection
(where, masked_fill, clamp). pow and abs are `_pow` and `_abs`, so the builtins keep working."""
import math

import numpy as np

from ._common import (DTYPES, I64_MAX, I64_MIN, NUMERIC, broadcast, check_dtype, desc, f32_in, fail, is_tensor, op,
                      scalar, scalar_to)


def _operands(name, x, y):
    """(a, b, dtype, shape) for tensor∘tensor or tensor∘scalar; a, b are arrays of dtype."""
    for what, v in (("x", x), ("y", y)):
        if is_tensor(v):
            check_dtype(name, what, v)
        elif scalar(v) is None:
            fail(name, f"{what} must be a tensor or a scalar, got {type(v).__name__}")
    if is_tensor(x) and is_tensor(y):
        if x.dtype != y.dtype:
            fail(name, f"x and y must have the same dtype, got {desc(x)} and {desc(y)}")
        dt = x.dtype
        shape = broadcast(name, x.shape, y.shape)
    else:
        t = x if is_tensor(x) else y
        dt, shape = t.dtype, t.shape
    a = x if is_tensor(x) else np.asarray(scalar_to(name, "x", x, dt))
    b = y if is_tensor(y) else np.asarray(scalar_to(name, "y", y, dt))
    return a, b, dt, shape


def _check_i64(name, r):
    if not I64_MIN <= r <= I64_MAX:
        fail(name, "integer overflow (scalar ints are int64)")
    return r


def _scalar_arith(name, a, b):
    """Python semantics on int64/float scalars, as the C++ kernels define them."""
    if isinstance(a, bool) or isinstance(b, bool):
        fail(name, f"x and y must be int or float scalars or tensors, got {a!r} and {b!r}")
    if isinstance(a, int) and isinstance(b, int):
        if name == "add":
            return _check_i64(name, a + b)
        if name == "sub":
            return _check_i64(name, a - b)
        if name == "mul":
            return _check_i64(name, a * b)
        if name == "div":
            if b == 0:
                fail(name, "division by zero")
            return float(a) / float(b)
        if name == "pow":
            if b < 0:
                if a == 0:
                    fail(name, "0 cannot be raised to a negative power")
                return float(a) ** float(b)
            if abs(a) > 1 and b >= 64:
                fail(name, "integer overflow (scalar ints are int64)")
            return _check_i64(name, a**b)
        if name == "maximum":
            return a if a > b else b
        if name == "minimum":
            return a if a < b else b
        if name == "floordiv":
            if b == 0:
                fail(name, "integer division by zero")
            return _check_i64(name, a // b)
        if name == "remainder":
            if b == 0:
                fail(name, "integer modulo by zero")
            return a % b
    a, b = float(a), float(b)
    if name == "add":
        return a + b
    if name == "sub":
        return a - b
    if name == "mul":
        return a * b
    if name == "div":
        if b == 0:
            fail(name, "float division by zero")
        return a / b
    if name == "pow":
        if a == 0 and b < 0 and math.isfinite(b):
            fail(name, "0.0 cannot be raised to a negative power")
        if a < 0 and math.isfinite(a) and math.isfinite(b) and b != math.floor(b):
            fail(name, f"a negative base to a fractional power has no real result ({a} ** {b})")
        try:
            return math.pow(a, b)
        except OverflowError:
            fail(name, f"result out of range ({a} ** {b})")
    if name == "maximum":
        return a if (a > b or a != a) else b
    if name == "minimum":
        return a if (a < b or a != a) else b
    if name in ("floordiv", "remainder"):
        if b == 0:
            fail(name, "float floor division by zero" if name == "floordiv" else "float modulo by zero")
        return a // b if name == "floordiv" else a % b
    raise AssertionError(name)


_NUMPY_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power,
                "maximum": np.maximum, "minimum": np.minimum}


def _arith(name, x, y):
    if not is_tensor(x) and not is_tensor(y):
        a, b = scalar(x), scalar(y)
        if a is None or b is None:
            fail(name, f"x and y must be tensors or scalars, got {type(x).__name__} and {type(y).__name__}")
        return _scalar_arith(name, a, b)
    tn, t = ("x", x) if is_tensor(x) else ("y", y)
    if name in ("div", "pow") and t.dtype != np.float32:
        extra = " (use floordiv for integer division)" if name == "div" else ""
        fail(name, f"{tn} must be f32{extra}, got {desc(t)}")
    if t.dtype not in NUMERIC:
        fail(name, f"{tn} must be f32, i64 or i32, got {desc(t)}")
    a, b, dt, shape = _operands(name, x, y)
    is_int = dt != np.float32
    with np.errstate(all="ignore"):
        if name in _NUMPY_ARITH:
            r = _NUMPY_ARITH[name](a, b)
        elif name in ("floordiv", "remainder"):
            if is_int and int(np.prod(shape)) > 0 and (np.asarray(b) == 0).any():
                fail(name, "integer division by zero (y has a zero element)")
            if (is_int and name == "floordiv" and int(np.prod(shape)) > 0
                    and ((np.asarray(a) == np.iinfo(dt).min) & (np.asarray(b) == -1)).any()):
                dname = {np.dtype(v): k for k, v in DTYPES.items()}[np.dtype(dt)]
                fail(name, f"integer overflow: the smallest {dname} divided by -1 (x has it where y is -1)")
            r = np.floor_divide(a, b) if name == "floordiv" else np.remainder(a, b)
        else:
            raise AssertionError(name)
    return np.array(np.broadcast_to(r, shape), dtype=dt)


@op
def add(x, y):
    return _arith("add", x, y)


@op
def sub(x, y):
    return _arith("sub", x, y)


@op
def mul(x, y):
    return _arith("mul", x, y)


@op
def div(x, y):
    return _arith("div", x, y)


@op("pow")
def _pow(x, y):
    return _arith("pow", x, y)


@op
def maximum(x, y):
    return _arith("maximum", x, y)


@op
def minimum(x, y):
    return _arith("minimum", x, y)


@op
def floordiv(x, y):
    return _arith("floordiv", x, y)


@op
def remainder(x, y):
    return _arith("remainder", x, y)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _compare(name, x, y):
    if not is_tensor(x) and not is_tensor(y):
        a, b = scalar(x), scalar(y)
        if a is None or b is None:
            fail(name, f"x and y must be tensors or scalars, got {type(x).__name__} and {type(y).__name__}")
        if isinstance(a, bool) != isinstance(b, bool):
            fail(name, f"x and y must both be bools or both be numbers, got {a!r} and {b!r}")
        if not (isinstance(a, int) and isinstance(b, int)):
            a, b = float(a), float(b)
        return bool(_CMP[name](a, b))
    a, b, dt, shape = _operands(name, x, y)
    return np.array(np.broadcast_to(_CMP[name](a, b), shape), dtype=np.bool_)


@op
def eq(x, y):
    return _compare("eq", x, y)


@op
def ne(x, y):
    return _compare("ne", x, y)


@op
def lt(x, y):
    return _compare("lt", x, y)


@op
def le(x, y):
    return _compare("le", x, y)


@op
def gt(x, y):
    return _compare("gt", x, y)


@op
def ge(x, y):
    return _compare("ge", x, y)


def _logic_operand(name, what, v):
    if is_tensor(v):
        if v.dtype != np.bool_:
            fail(name, f"{what} must be a bool tensor or a bool, got {desc(v)}")
        return v
    s = scalar(v)
    if not isinstance(s, bool):
        fail(name, f"{what} must be a bool tensor or a bool, got {v!r}")
    return s


def _logical(name, fn, x, y):
    a, b = _logic_operand(name, "x", x), _logic_operand(name, "y", y)
    if not is_tensor(a) and not is_tensor(b):
        return bool(fn(a, b))
    shape = broadcast(name, np.shape(a), np.shape(b))
    return np.array(np.broadcast_to(fn(a, b), shape), dtype=np.bool_)


@op
def logical_and(x, y):
    return _logical("logical_and", np.logical_and, x, y)


@op
def logical_or(x, y):
    return _logical("logical_or", np.logical_or, x, y)


@op
def logical_xor(x, y):
    return _logical("logical_xor", np.logical_xor, x, y)


@op
def logical_not(x):
    a = _logic_operand("logical_not", "x", x)
    return (not a) if isinstance(a, bool) else np.asarray(np.logical_not(a))




def _unary_f32(name, x, fn):
    x = f32_in(name, x)
    with np.errstate(all="ignore"):
        return np.asarray(fn(x), dtype=np.float32)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


@op
def exp(x):
    return _unary_f32("exp", x, np.exp)


@op
def log(x):
    return _unary_f32("log", x, np.log)


@op
def sqrt(x):
    return _unary_f32("sqrt", x, np.sqrt)


@op
def rsqrt(x):
    return _unary_f32("rsqrt", x, lambda v: np.float32(1) / np.sqrt(v))


@op
def tanh(x):
    return _unary_f32("tanh", x, np.tanh)


@op
def sigmoid(x):
    return _unary_f32("sigmoid", x, lambda v: np.float32(1) / (np.float32(1) + np.exp(-v)))


@op
def silu(x):
    return _unary_f32("silu", x, lambda v: v / (np.float32(1) + np.exp(-v)))


@op
def erf(x):
    return _unary_f32("erf", x, lambda v: _erf64(v.astype(np.float64)))


@op
def gelu(x, approximate="none"):
    x = f32_in("gelu", x)
    if approximate == "none":
        return _unary_f32("gelu", x, lambda v: v * 0.5 * (1 + _erf64(v.astype(np.float64) / math.sqrt(2))))
    if approximate == "tanh":
        def f(v):
            v = v.astype(np.float64)
            return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
        return _unary_f32("gelu", x, f)
    fail("gelu", f'approximate must be "none" or "tanh", got "{approximate}"')


def _numeric_in(name, x):
    if not is_tensor(x) or x.dtype not in NUMERIC:
        fail(name, f"x must be f32, i64 or i32, got {desc(x)}")
    return x


def _int_or_float(name, x):
    s = scalar(x)
    if s is None or isinstance(s, bool):
        fail(name, f"x must be a tensor or an int/float scalar, got {x!r}")
    return s


@op
def neg(x):
    if not is_tensor(x):
        s = _int_or_float("neg", x)
        return _check_i64("neg", -s) if isinstance(s, int) else -s
    x = _numeric_in("neg", x)
    with np.errstate(all="ignore"):
        return np.asarray(np.negative(x))


@op("abs")
def _abs(x):
    if not is_tensor(x):
        s = _int_or_float("abs", x)
        return _check_i64("abs", abs(s)) if isinstance(s, int) else abs(s)
    x = _numeric_in("abs", x)
    with np.errstate(all="ignore"):
        return np.asarray(np.abs(x))


@op
def relu(x):
    x = _numeric_in("relu", x)
    return np.where(x <= 0, x.dtype.type(0), x).astype(x.dtype)




@op
def where(cond, x, y):
    if not is_tensor(cond) or cond.dtype != np.bool_:
        fail("where", f"cond must be a bool tensor, got {desc(cond)}")
    if not is_tensor(x) and not is_tensor(y):
        a, b = scalar(x), scalar(y)
        if a is None or b is None:
            fail("where", "x and y must be tensors or scalars")
        if isinstance(a, bool) != isinstance(b, bool):
            fail("where", f"x and y must both be bools or both be numbers, got {a!r} and {b!r}")
        dt = np.bool_ if isinstance(a, bool) else np.float32 if (isinstance(a, float) or isinstance(b, float)) else np.int64
        xa, ya = np.asarray(scalar_to("where", "x", a, dt)), np.asarray(scalar_to("where", "y", b, dt))
    else:
        xa, ya, dt, _ = _operands("where", x, y)
    shape = broadcast("where", cond.shape, xa.shape, ya.shape)
    return np.array(np.broadcast_to(np.where(cond, xa, ya), shape), dtype=dt)


@op
def masked_fill(x, mask, value):
    if not is_tensor(x):
        fail("masked_fill", f"x must be a tensor, got {type(x).__name__}")
    check_dtype("masked_fill", "x", x)
    if not is_tensor(mask) or mask.dtype != np.bool_:
        fail("masked_fill", f"mask must be a bool tensor, got {desc(mask)}")
    if broadcast("masked_fill", x.shape, mask.shape) != tuple(x.shape):
        fail("masked_fill", f"mask {desc(mask)} does not broadcast to the shape of x {desc(x)}")
    if scalar(value) is None:
        fail("masked_fill", f"value must be an int, float or bool scalar, got {type(value).__name__}")
    v = scalar_to("masked_fill", "value", value, x.dtype)
    return np.where(mask, v, x).astype(x.dtype)


@op
def clamp(x, min=None, max=None):  # noqa: A002 (the op's parameter names)
    lo, hi = min, max
    if not is_tensor(x):
        fail("clamp", f"x must be a tensor, got {type(x).__name__}")
    if lo is None and hi is None:
        fail("clamp", "at least one of min and max must not be None")
    for what, b in (("min", lo), ("max", hi)):
        if b is None:
            continue
        s = scalar(b)
        if s is None or isinstance(s, bool):
            fail("clamp", f"{what} must be an int or float scalar or None, got {b!r}")
        if isinstance(s, float) and math.isnan(s):
            fail("clamp", f"{what} must not be NaN")
    x = _numeric_in("clamp", x)
    r = x
    if lo is not None:
        lv = scalar_to("clamp", "min", lo, x.dtype)
        r = np.where(r < lv, lv, r)
    if hi is not None:
        hv = scalar_to("clamp", "max", hi, x.dtype)
        r = np.where(r > hv, hv, r)
    return np.asarray(r, dtype=x.dtype).copy()
