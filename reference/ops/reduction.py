"""Reference reductions: sum, mean, max, ..., softmax, topk, cumsum, item. Ops named like a
builtin (sum, max, min, any, all) are `_sum`, ..., so the builtins keep working."""
import warnings

import numpy as np

from ._common import NUMERIC, desc, f32_in, fail, op, tensor_in


def _norm_dim(name, x, d):
    n = max(x.ndim, 1)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        fail(name, f"dim must be an int, got {d!r}")
    d = int(d)
    if not -n <= d < n:
        fail(name, f"dim {d} is out of range for x {desc(x)} (expected {-n}..{n - 1})")
    return d + n if d < 0 else d


def _axes(name, x, dim):
    """The reduced axes as a tuple (all for None); a 0-d x accepts 0/-1 and reduces nothing."""
    if dim is None:
        return tuple(range(x.ndim))
    dims = [dim] if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) else list(dim)
    if not dims:
        fail(name, "dim must name at least one dimension (None reduces all), got []")
    axes = []
    for d in dims:
        a = _norm_dim(name, x, d)
        if x.ndim == 0:
            continue
        if a in axes:
            fail(name, f"dim {d} is repeated in {dims}")
        axes.append(a)
    return tuple(axes)


def _reduced(x, axes, keepdim):
    """(out_shape, reduced count)."""
    out = [1 if i in axes else s for i, s in enumerate(x.shape) if keepdim or i not in axes]
    count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    return tuple(out), count


@op("sum")
def _sum(x, dim=None, keepdim=False):
    x = tensor_in("sum", x)
    axes = _axes("sum", x, dim)
    if x.dtype == np.float32:
        return np.asarray(np.sum(x.astype(np.float64), axis=axes, keepdims=keepdim), dtype=np.float32)
    return np.asarray(np.sum(x.astype(np.int64), axis=axes, keepdims=keepdim), dtype=np.int64)


@op
def mean(x, dim=None, keepdim=False):
    x = tensor_in("mean", x)
    if x.dtype != np.float32:
        fail("mean", f"x must be f32, got {desc(x)}")
    axes = _axes("mean", x, dim)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of nothing is NaN
        r = np.mean(x.astype(np.float64), axis=axes, keepdims=keepdim)
    return np.asarray(r, dtype=np.float32)


def _extreme(name, fn, x, dim, keepdim):
    x = tensor_in(name, x)
    if x.dtype not in NUMERIC:
        fail(name, f"x must be f32, i64 or i32, got {desc(x)}")
    axes = _axes(name, x, dim)
    out_shape, count = _reduced(x, axes, keepdim)
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return np.zeros(out_shape, x.dtype)
    if count == 0:
        fail(name, f"cannot reduce over a zero-size dimension of x {desc(x)}")
    return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=x.dtype)


@op("max")
def _max(x, dim=None, keepdim=False):
    return _extreme("max", np.max, x, dim, keepdim)


@op("min")
def _min(x, dim=None, keepdim=False):
    return _extreme("min", np.min, x, dim, keepdim)


def _anyall(name, fn, x, dim, keepdim):
    x = tensor_in(name, x)
    if x.dtype != np.bool_:
        fail(name, f"x must be a bool tensor, got {desc(x)}")
    axes = _axes(name, x, dim)
    return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=np.bool_)


@op("any")
def _any(x, dim=None, keepdim=False):
    return _anyall("any", np.any, x, dim, keepdim)


@op("all")
def _all(x, dim=None, keepdim=False):
    return _anyall("all", np.all, x, dim, keepdim)


def _argext(name, fn, x, dim, keepdim):
    x = tensor_in(name, x)
    if x.dtype not in NUMERIC:
        fail(name, f"x must be f32, i64 or i32, got {desc(x)}")
    d = _norm_dim(name, x, dim)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    out_shape, count = _reduced(x, (d,), keepdim)
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return np.zeros(out_shape, np.int64)
    if count == 0:
        fail(name, f"cannot reduce over a zero-size dimension of x {desc(x)}")
    # numpy returns the first extreme, and the first NaN if there is one (like the kernel).
    return np.asarray(fn(x, axis=d, keepdims=keepdim), dtype=np.int64)


@op
def argmax(x, dim=-1, keepdim=False):
    return _argext("argmax", np.argmax, x, dim, keepdim)


@op
def argmin(x, dim=-1, keepdim=False):
    return _argext("argmin", np.argmin, x, dim, keepdim)


def _softmax(name, x, dim, log):
    """Row max subtracted; float32 exp, float64 sum. A row that is all -inf (or holds
    NaN or +inf) gives NaN everywhere in the row, like torch."""
    x = f32_in(name, x)
    d = _norm_dim(name, x, dim)
    shape0 = x.shape
    if x.ndim == 0:
        x = x.reshape(1)
    if x.shape[d] == 0:
        return np.zeros(shape0, np.float32)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=d, keepdims=True)
        z = x - m
        e = np.exp(z)
        s = np.sum(e.astype(np.float64), axis=d, keepdims=True)
        if log:
            r = z - np.log(s.astype(np.float32))
        else:
            r = e * (1.0 / s).astype(np.float32)
    return np.asarray(r, dtype=np.float32).reshape(shape0)


@op
def softmax(x, dim=-1):
    return _softmax("softmax", x, dim, False)


@op
def log_softmax(x, dim=-1):
    return _softmax("log_softmax", x, dim, True)


@op
def topk(x, k, dim=-1, largest=True):
    """Sorted best first; ties to the lower index; NaN is larger than everything."""
    x = tensor_in("topk", x)
    if x.dtype not in NUMERIC:
        fail("topk", f"x must be f32, i64 or i32, got {desc(x)}")
    d = _norm_dim("topk", x, dim)
    zero_d = x.ndim == 0
    xv = x.reshape(1) if zero_d else x
    n = xv.shape[d]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        fail("topk", f"k = {k} is out of range for a dimension of size {n} (x {desc(x)})")
    if zero_d and k != 1:
        fail("topk", f"k = {k}: a 0-d x has one element and needs k = 1")
    rows = np.moveaxis(xv, d, -1)
    if largest:
        # A stable ascending sort of the reversed row, reversed: descending, equal
        # values (and NaNs, which sort last ascending) in increasing index order.
        order = np.argsort(rows[..., ::-1], axis=-1, kind="stable")
        order = (n - 1 - order)[..., ::-1]
    else:
        order = np.argsort(rows, axis=-1, kind="stable")
    idx = order[..., :k]
    vals = np.take_along_axis(rows, idx, axis=-1)
    vals, idx = np.moveaxis(vals, -1, d), np.moveaxis(idx, -1, d)
    if zero_d:
        vals, idx = vals.reshape(()), idx.reshape(())
    return np.array(vals, dtype=x.dtype), np.array(idx, dtype=np.int64)


@op
def cumsum(x, dim):
    x = tensor_in("cumsum", x)
    d = _norm_dim("cumsum", x, dim)
    xv = x.reshape(1) if x.ndim == 0 else x
    if x.dtype == np.float32:
        r = np.cumsum(xv.astype(np.float64), axis=d).astype(np.float32)
    else:
        r = np.cumsum(xv.astype(np.int64), axis=d)
    return r.reshape(x.shape)


@op
def item(x):
    x = tensor_in("item", x)
    if x.size != 1:
        fail("item", f"x must have exactly one element, got {desc(x)}")
    v = x.reshape(-1)[0]
    if x.dtype == np.float32:
        return float(v)
    if x.dtype == np.bool_:
        return bool(v)
    return int(v)
