"""What every family of reference ops shares: the registry of ops (OPS, op), the error
they raise, and the checks and operand rules of the C++ kernels."""
import numpy as np

OPS = {}


def op(fn_or_name):
    """Registers a reference op: `@op` under the function's name, `@op("sum")` under
    another (ops named like a Python builtin are defined as `_sum`, ... so that the
    builtins keep working where they are used)."""
    if isinstance(fn_or_name, str):
        def register(fn):
            OPS[fn_or_name] = fn
            return fn
        return register
    OPS[fn_or_name.__name__] = fn_or_name
    return fn_or_name


class OpError(RuntimeError):
    """Raised by a reference op on bad input (the C++ kernel raises VMError)."""


def as_f32(x):
    return np.asarray(x, dtype=np.float32)


def fail(name, msg):
    raise OpError(f"{name}: {msg}")


def check_dim(name, dim, nd, what="dim"):
    if not -nd <= dim < nd:
        fail(name, f"{what} {dim} out of range for a {nd}-d tensor")
    return dim + nd if dim < 0 else dim


def check_index(name, index, what="index"):
    index = np.asarray(index)
    if index.dtype not in (np.int64, np.int32):
        fail(name, f"{what} must be i64 or i32, got {index.dtype}")
    return index


def require_f32(name, **tensors):
    for what, t in tensors.items():
        if not isinstance(t, np.ndarray) or t.dtype != np.float32:
            fail(name, f"{what} must be f32")


DTYPES = {"f32": np.float32, "i64": np.int64, "i32": np.int32, "bool": np.bool_}
DTYPE_NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
NUMERIC = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int32))
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def half_dtypes():
    """{"f16": float16, "bf16": ml_dtypes.bfloat16}: the 16-bit weight dtypes (numpy has
    no bfloat16; ml_dtypes is what the bindings and the weights reader use)."""
    import ml_dtypes

    return {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}


def widen_16bit(weight):
    """An f16 / bf16 weight as the f32 the kernels widen it to (exact); others as they are."""
    if isinstance(weight, np.ndarray) and weight.dtype in half_dtypes().values():
        return weight.astype(np.float32)
    return weight


def is_tensor(v):
    return isinstance(v, np.ndarray)


def scalar(v):
    """A Python scalar from an int/float/bool (numpy scalars included), else None."""
    if isinstance(v, np.generic):
        v = v.item()
    return v if isinstance(v, (bool, int, float)) else None


def desc(v):
    if is_tensor(v):
        return f"{DTYPE_NAMES.get(v.dtype, str(v.dtype))}{list(v.shape)}"
    return repr(v)


def check_dtype(name, what, t, allowed=None):
    if t.dtype not in DTYPE_NAMES:
        fail(name, f"{what} has unsupported dtype {t.dtype}")
    if allowed is not None and t.dtype not in [np.dtype(a) for a in allowed]:
        fail(name, f"{what} must be {' or '.join(DTYPE_NAMES[np.dtype(a)] for a in allowed)}, got {desc(t)}")


def scalar_to(name, what, v, dtype):
    """The operand rules: int -> f32/i64/i32 (range-checked), float -> f32, bool -> bool."""
    s = scalar(v)
    dtype = np.dtype(dtype)
    if s is None:
        fail(name, f"{what} must be an int, float or bool scalar, got {type(v).__name__}")
    if dtype == np.float32:
        if isinstance(s, bool):
            fail(name, f"{what} is a bool scalar; an f32 tensor needs an int or float")
        with np.errstate(over="ignore"):
            return np.float32(s)
    if dtype in (np.int64, np.int32):
        if isinstance(s, bool) or not isinstance(s, int):
            fail(name, f"{what} is {s!r}; an {DTYPE_NAMES[dtype]} tensor needs an int scalar")
        if dtype == np.int32 and not -(2**31) <= s < 2**31:
            fail(name, f"{what} = {s} does not fit an i32 tensor")
        return dtype.type(s)
    if dtype == np.bool_:
        if not isinstance(s, bool):
            fail(name, f"{what} is {s!r}; a bool tensor needs a bool scalar")
        return np.bool_(s)
    fail(name, f"dtype {dtype} is not supported")


def broadcast(name, *shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        fail(name, f"cannot broadcast shapes {' and '.join(str(list(s)) for s in shapes)}")


def tensor_in(name, x):
    if not is_tensor(x):
        fail(name, f"x must be a tensor, got {type(x).__name__}")
    check_dtype(name, "x", x)
    return x


def f32_in(name, x):
    if not is_tensor(x) or x.dtype != np.float32:
        fail(name, f"x must be f32, got {desc(x)}")
    return x
