"""numpy reference ops. Plain, obvious code: these define what the kernels must compute."""
import numpy as np

OPS = {}


def op(fn):
    """Registers a reference op under its function name."""
    OPS[fn.__name__] = fn
    return fn


class OpError(RuntimeError):
    """Raised by a reference op on bad input (the C++ kernel raises VMError)."""


def _f32(x):
    return np.asarray(x, dtype=np.float32)


@op
def linear(x, weight, bias=None):
    if x.dtype != np.float32 or weight.dtype != np.float32:
        raise OpError("linear: x and weight must be f32")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise OpError(f"linear: x {x.shape} does not match weight {weight.shape}")
    y = np.matmul(x, weight.T, dtype=np.float32) if x.shape[-1] else np.zeros(x.shape[:-1] + (weight.shape[0],), np.float32)
    if bias is not None:
        y = y + bias
    return _f32(y)


# =============================================================================
# Section B: linear algebra (matmul), nn, attention, shape, indexing.
# Note: this section defines an op named `slice`, which shadows the builtin in this
# module from here on; code here uses `builtins.slice` for Python slices.
# =============================================================================
import builtins as _builtins  # noqa: E402


def _b_fail(name, msg):
    raise OpError(f"{name}: {msg}")


def _b_dim(name, dim, nd, what="dim"):
    if not -nd <= dim < nd:
        _b_fail(name, f"{what} {dim} out of range for a {nd}-d tensor")
    return dim + nd if dim < 0 else dim


def _b_index(name, index, what="index"):
    index = np.asarray(index)
    if index.dtype not in (np.int64, np.int32):
        _b_fail(name, f"{what} must be i64 or i32, got {index.dtype}")
    return index


def _b_f32(name, **tensors):
    for what, t in tensors.items():
        if not isinstance(t, np.ndarray) or t.dtype != np.float32:
            _b_fail(name, f"{what} must be f32")


@op
def matmul(x, y):
    _b_f32("matmul", x=x, y=y)
    if x.ndim < 2 or y.ndim < 2:
        _b_fail("matmul", f"x and y must have at least 2 dimensions, got {x.shape} and {y.shape}")
    if x.shape[-1] != y.shape[-2]:
        _b_fail("matmul", f"x[..., m, k] and y[..., k, n] do not match, got {x.shape} and {y.shape}")
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        _b_fail("matmul", f"batch dimensions of x and y do not broadcast, got {x.shape} and {y.shape}")
    if x.shape[-1] == 0:
        return np.zeros(batch + (x.shape[-2], y.shape[-1]), np.float32)
    return _f32(np.matmul(x, y))


def _b_norm_checks(name, x, eps, **params):
    _b_f32(name, x=x)
    if x.ndim < 1:
        _b_fail(name, "x must have at least 1 dimension")
    for what, p in params.items():
        if p is not None and (not isinstance(p, np.ndarray) or p.dtype != np.float32 or p.shape != (x.shape[-1],)):
            _b_fail(name, f"{what} must be f32[{x.shape[-1]}] (the last dim of x)")
    if not eps >= 0:
        _b_fail(name, f"eps must be >= 0, got {eps}")


@op
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Biased variance, eps inside the sqrt (torch); statistics in float64."""
    _b_norm_checks("layer_norm", x, eps, weight=weight, bias=bias)
    if x.shape[-1] == 0:
        return x.copy()
    xd = x.astype(np.float64)
    mean = xd.mean(-1, keepdims=True)
    var = np.square(xd - mean).mean(-1, keepdims=True)
    y = (xd - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return _f32(y)


@op
def rms_norm(x, weight=None, eps=1e-6):
    _b_norm_checks("rms_norm", x, eps, weight=weight)
    if x.shape[-1] == 0:
        return x.copy()
    xd = x.astype(np.float64)
    y = xd / np.sqrt(np.square(xd).mean(-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return _f32(y)


@op
def embedding(ids, weight):
    ids = _b_index("embedding", ids, "ids")
    if not isinstance(weight, np.ndarray) or weight.dtype != np.float32 or weight.ndim != 2:
        _b_fail("embedding", "weight must be f32 [V, D]")
    v = weight.shape[0]
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        _b_fail("embedding", f"id {ids[bad].flat[0]} out of range [0, {v})")
    return weight[ids]


@op
def attention(q, k, v, mask=None, scale=None):
    """softmax(scale * q k^T + mask) v in float32, like the kernel. A query row whose
    scores are all -inf (every key masked, or no keys) gives zeros, not NaN."""
    _b_f32("attention", q=q, k=k, v=v)
    if q.ndim != 4:
        _b_fail("attention", f"q must be 4-D [B, H, Tq, D], got {q.shape}")
    b, h, tq, d = q.shape
    if k.ndim != 4 or k.shape[:2] != (b, h) or k.shape[3] != d:
        _b_fail("attention", f"k must be [B, H, Tk, D] = [{b}, {h}, Tk, {d}] to match q, got {k.shape}")
    tk = k.shape[2]
    if v.ndim != 4 or v.shape[:3] != (b, h, tk):
        _b_fail("attention", f"v must be [B, H, Tk, Dv] = [{b}, {h}, {tk}, Dv] to match q and k, got {v.shape}")
    if scale is None:
        scale = 1.0 / np.sqrt(d) if d > 0 else 1.0
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)):
        _b_fail("attention", f"argument 'scale' must be a float or None, got {scale!r}")
    full = (b, h, tq, tk)
    if mask is not None:
        if not isinstance(mask, np.ndarray) or mask.dtype not in (np.float32, np.bool_):
            _b_fail("attention", "mask must be f32 (additive) or bool (True = attend)")
        ok = mask.ndim <= 4
        if ok:
            try:
                ok = np.broadcast_shapes(mask.shape, full) == full
            except ValueError:
                ok = False
        if not ok:
            _b_fail("attention", f"mask must broadcast to [B, H, Tq, Tk] = {list(full)}, got {mask.shape}")
    dv = v.shape[3]
    if tk == 0 or 0 in full or dv == 0:
        return np.zeros((b, h, tq, dv), np.float32)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) if d > 0 else np.zeros(full, np.float32)
    s = (s.astype(np.float32) * np.float32(scale)).astype(np.float32)
    if mask is not None:
        s = np.where(mask, s, np.float32(-np.inf)) if mask.dtype == np.bool_ else s + mask
    s = np.broadcast_to(s, full).astype(np.float32)
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(s - np.where(dead, np.float32(0), m))
        p = np.where(dead, np.float32(0), e / e.sum(-1, keepdims=True)).astype(np.float32)
    return _f32(np.matmul(p, v))


@op
def reshape(x, shape):
    shape = list(shape)
    if sum(1 for s in shape if s == -1) > 1:
        _b_fail("reshape", f"only one dim of shape may be -1, got {shape}")
    if any(s < -1 for s in shape):
        _b_fail("reshape", f"shape {shape} has a negative dim")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or x.size % known:
            _b_fail("reshape", f"cannot reshape x {x.shape} to {shape}")
        shape[shape.index(-1)] = x.size // known
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        _b_fail("reshape", f"cannot reshape x {x.shape} to {shape}")
    return np.reshape(x, shape)


@op
def transpose(x, dim0, dim1):
    d0 = _b_dim("transpose", dim0, x.ndim, "dim0")
    d1 = _b_dim("transpose", dim1, x.ndim, "dim1")
    return np.array(np.swapaxes(x, d0, d1), order="C")


@op
def permute(x, dims):
    dims = [_b_dim("permute", d, x.ndim) for d in dims] if len(dims) == x.ndim else None
    if dims is None or len(set(dims)) != x.ndim:
        _b_fail("permute", f"dims must list each of the {x.ndim} dims of x once")
    return np.array(np.transpose(x, dims), order="C")


@op
def concat(*tensors, dim=0):
    if not tensors:
        _b_fail("concat", "needs at least one tensor")
    t0 = tensors[0]
    if t0.ndim == 0:
        _b_fail("concat", "cannot concat 0-d tensors")
    d = _b_dim("concat", dim, t0.ndim)
    for i, t in enumerate(tensors):
        if t.dtype != t0.dtype:
            _b_fail("concat", f"tensors must have the same dtype, got {t0.dtype} (tensors[0]) and {t.dtype} (tensors[{i}])")
        if t.ndim != t0.ndim or any(a != b for j, (a, b) in enumerate(zip(t.shape, t0.shape)) if j != d):
            _b_fail("concat", f"tensors must match in every dim but {d}, got {t0.shape} and {t.shape} (tensors[{i}])")
    return np.concatenate(tensors, axis=d)


@op
def slice(x, dim, start=None, end=None, step=1):  # noqa: A001 (the op's name)
    d = _b_dim("slice", dim, x.ndim)
    if step < 1:
        _b_fail("slice", f"step must be >= 1, got {step}")
    idx = [_builtins.slice(None)] * x.ndim
    idx[d] = _builtins.slice(start, end, step)
    return np.array(x[tuple(idx)], order="C")


@op
def unsqueeze(x, dim):
    if not -x.ndim - 1 <= dim <= x.ndim:
        _b_fail("unsqueeze", f"dim {dim} out of range [{-x.ndim - 1}, {x.ndim}]")
    if x.ndim == 8:
        _b_fail("unsqueeze", "x already has the maximum of 8 dims")
    return np.expand_dims(x, dim)


@op
def squeeze(x, dim):
    d = _b_dim("squeeze", dim, x.ndim)
    if x.shape[d] != 1:
        _b_fail("squeeze", f"dim {d} of x {x.shape} has size {x.shape[d]}, not 1")
    return np.squeeze(x, axis=d)


@op
def expand(x, shape):
    shape = list(shape)
    n = len(shape)
    if n < x.ndim:
        _b_fail("expand", f"cannot expand {x.shape} to {shape}: the target has fewer dimensions")
    for i in range(n):
        j = i - (n - x.ndim)
        if shape[i] == -1 and j >= 0:
            shape[i] = x.shape[j]
        if shape[i] < 0:
            _b_fail("expand", f"cannot expand {x.shape} to {shape}: bad size {shape[i]}")
        if j >= 0 and x.shape[j] not in (1, shape[i]):
            _b_fail("expand", f"cannot expand {x.shape} to {shape}")
    return np.array(np.broadcast_to(x, shape), copy=True)


@op
def size(x, dim):
    return int(x.shape[_b_dim("size", dim, x.ndim)])


@op
def shape(x):
    return [int(s) for s in x.shape]


@op
def numel(x):
    return int(x.size)


@op
def repeat_interleave(x, repeats, dim):
    d = _b_dim("repeat_interleave", dim, x.ndim)
    if repeats < 0:
        _b_fail("repeat_interleave", f"repeats must be >= 0, got {repeats}")
    return np.repeat(x, repeats, axis=d)


def _b_check_range(name, index, n, d):
    bad = (index < 0) | (index >= n)
    if bad.any():
        _b_fail(name, f"index {index[bad].flat[0]} out of range [0, {n}) for dim {d}")


@op
def index_select(x, dim, index):
    d = _b_dim("index_select", dim, x.ndim)
    index = _b_index("index_select", index)
    if index.ndim != 1:
        _b_fail("index_select", f"index must be 1-D, got {index.shape}")
    _b_check_range("index_select", index, x.shape[d], d)
    return np.take(x, index, axis=d)


def _b_gather_checks(name, x, dim, index):
    d = _b_dim(name, dim, x.ndim)
    index = _b_index(name, index)
    if index.ndim != x.ndim:
        _b_fail(name, f"index must have the same number of dims as x {x.shape}, got {index.shape}")
    for j in range(x.ndim):
        if j != d and index.shape[j] > x.shape[j]:
            _b_fail(name, f"index {index.shape} is larger than x {x.shape} in dim {j}")
    _b_check_range(name, index, x.shape[d], d)
    # The part of x that index addresses off `dim` (torch allows a smaller index).
    sub = tuple(_builtins.slice(None) if j == d else _builtins.slice(0, index.shape[j]) for j in range(x.ndim))
    return d, index, sub


@op
def gather(x, dim, index):
    d, index, sub = _b_gather_checks("gather", x, dim, index)
    return np.take_along_axis(x[sub], index.astype(np.int64), axis=d)


@op
def scatter(x, dim, index, src):
    d, index, sub = _b_gather_checks("scatter", x, dim, index)
    if isinstance(src, np.ndarray):
        if src.dtype != x.dtype or src.shape != index.shape:
            _b_fail("scatter", f"src must be a tensor of x's dtype shaped like index, got {src.dtype}{list(src.shape)}")
    elif isinstance(src, (bool, np.bool_)):
        if x.dtype != np.bool_:
            _b_fail("scatter", f"argument 'src' is a bool scalar; an {x.dtype} tensor needs a number")
    elif isinstance(src, (int, np.integer)):
        if x.dtype == np.bool_:
            _b_fail("scatter", "argument 'src' is an int; a bool tensor needs a bool scalar")
        if x.dtype == np.int32 and not -2**31 <= src < 2**31:
            _b_fail("scatter", f"argument 'src' = {src} does not fit an i32 tensor")
    elif isinstance(src, (float, np.floating)):
        if x.dtype != np.float32:
            _b_fail("scatter", f"argument 'src' is a float; an {x.dtype} tensor needs an int scalar")
    else:
        _b_fail("scatter", f"argument 'src' must be a tensor or a scalar, got {type(src).__name__}")
    out = x.copy()
    view = out[sub]
    np.put_along_axis(view, index.astype(np.int64), np.asarray(src, dtype=x.dtype), axis=d)
    return out
