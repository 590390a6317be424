"""Reference creation ops: arange, full, zeros, ones, *_like, cast, tensor."""
import numpy as np

from ._common import DTYPES, check_dtype, fail, half_dtypes, op, scalar, scalar_to, tensor_in


def _dtype(name, dtype, what="dtype"):
    if not isinstance(dtype, str) or dtype not in DTYPES:
        fail(name, f'{what} must be "f32", "i64", "i32" or "bool", got {dtype!r}')
    return np.dtype(DTYPES[dtype])


def _opt_dtype(name, dtype, default):
    return np.dtype(default) if dtype is None else _dtype(name, dtype)


def _shape(name, shape):
    shape = [shape] if isinstance(shape, (int, np.integer)) else list(shape)
    if any(s < 0 for s in shape):
        fail(name, f"shape must not have negative sizes, got {shape}")
    return tuple(int(s) for s in shape)


def _int_arg(name, what, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        fail(name, f"argument '{what}' must be an int, got {v!r}")
    return int(v)


@op
def arange(start, end, step=1, dtype="i64"):
    start, end, step = (_int_arg("arange", w, v) for w, v in (("start", start), ("end", end), ("step", step)))
    dt = _dtype("arange", dtype)
    if dt == np.bool_:
        fail("arange", 'dtype must be "i64", "i32" or "f32", got "bool"')
    if step == 0:
        fail("arange", "step must not be zero")
    n = max(0, (end - start + step - 1) // step if step > 0 else (start - end - step - 1) // -step)
    if n > 2**40:
        fail("arange", f"arange({start}, {end}, {step}) is too long")
    if dt == np.int32 and n > 0:
        last = start + (n - 1) * step
        if not (-(2**31) <= start < 2**31 and -(2**31) <= last < 2**31):
            fail("arange", f"arange({start}, {end}, {step}) has values outside the i32 range")
    return (start + np.arange(n, dtype=np.int64) * step).astype(dt)


def _filled(name, shape, value, dt):
    if scalar(value) is None:
        fail(name, f"value must be an int, float or bool scalar, got {type(value).__name__}")
    return np.full(shape, scalar_to(name, "value", value, dt), dtype=dt)


@op
def full(shape, value, dtype="f32"):
    return _filled("full", _shape("full", shape), value, _dtype("full", dtype))


@op
def zeros(shape, dtype="f32"):
    return np.zeros(_shape("zeros", shape), _dtype("zeros", dtype))


@op
def ones(shape, dtype="f32"):
    return np.ones(_shape("ones", shape), _dtype("ones", dtype))


@op
def full_like(x, value, dtype=None):
    x = tensor_in("full_like", x)
    return _filled("full_like", x.shape, value, _opt_dtype("full_like", dtype, x.dtype))


@op
def zeros_like(x, dtype=None):
    x = tensor_in("zeros_like", x)
    return np.zeros(x.shape, _opt_dtype("zeros_like", dtype, x.dtype))


@op
def cast(x, dtype):
    """float -> int truncates toward zero (NaN, inf, out of range: error); i64 -> i32
    wraps; to bool is x != 0; bool -> numbers is 0/1; the same dtype returns x."""
    halves = half_dtypes()
    if not isinstance(x, np.ndarray):
        fail("cast", f"x must be a tensor, got {type(x).__name__}")
    if x.dtype not in halves.values():
        check_dtype("cast", "x", x)
    if isinstance(dtype, str) and dtype in halves:
        dt = halves[dtype]
    elif not isinstance(dtype, str) or dtype not in DTYPES:
        fail("cast", f'dtype must be "f32", "i64", "i32", "bool", "f16" or "bf16", got {dtype!r}')
    else:
        dt = np.dtype(DTYPES[dtype])
    if dt == x.dtype:
        return x
    if dt in halves.values() or x.dtype in halves.values():
        # f32 <-> f16/bf16 only: numpy's and ml_dtypes' conversions round to nearest even.
        floats = (np.dtype(np.float32), *halves.values())
        if x.dtype not in floats or dt not in floats:
            fail("cast", f"{x.dtype} cannot be cast to {dtype}: f16 and bf16 convert to and from f32 only")
        with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf, NaN stays NaN: as the kernel
            return np.asarray(x.astype(np.float32).astype(dt))
    if dt == np.bool_:
        return np.asarray(x != 0)
    if x.dtype == np.float32 and dt != np.float32:
        t = np.trunc(x.astype(np.float64))
        bits = 63 if dt == np.int64 else 31
        with np.errstate(invalid="ignore"):
            ok = (t >= -(2.0**bits)) & (t < 2.0**bits)
        if not ok.all():
            i = int(np.flatnonzero(~ok.reshape(-1))[0])
            fail("cast", f"x has the value {x.reshape(-1)[i]} at flat index {i}, which cannot be cast to {dtype}")
        return np.asarray(t.astype(dt))
    return np.asarray(x.astype(dt))


@op
def tensor(value, dtype=None):
    s = scalar(value)
    if s is None:
        fail("tensor", f"value must be an int, float or bool scalar, got {type(value).__name__}")
    default = np.bool_ if isinstance(s, bool) else np.int64 if isinstance(s, int) else np.float32
    dt = _opt_dtype("tensor", dtype, default)
    return np.asarray(scalar_to("tensor", "value", s, dt), dtype=dt).reshape(())
