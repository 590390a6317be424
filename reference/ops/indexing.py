"""Reference indexing ops: index_select, gather, scatter."""

import numpy as np

from ._common import check_dim, check_index, fail, op


def _check_range(name, index, n, d):
    bad = (index < 0) | (index >= n)
    if bad.any():
        fail(name, f"index {index[bad].flat[0]} out of range [0, {n}) for dim {d}")


@op
def index_select(x, dim, index):
    d = check_dim("index_select", dim, x.ndim)
    index = check_index("index_select", index)
    if index.ndim != 1:
        fail("index_select", f"index must be 1-D, got {index.shape}")
    _check_range("index_select", index, x.shape[d], d)
    return np.take(x, index, axis=d)


def _gather_checks(name, x, dim, index):
    d = check_dim(name, dim, x.ndim)
    index = check_index(name, index)
    if index.ndim != x.ndim:
        fail(name, f"index must have the same number of dims as x {x.shape}, got {index.shape}")
    for j in range(x.ndim):
        if j != d and index.shape[j] > x.shape[j]:
            fail(name, f"index {index.shape} is larger than x {x.shape} in dim {j}")
    _check_range(name, index, x.shape[d], d)
    # The part of x that index addresses off `dim` (torch allows a smaller index).
    sub = tuple(slice(None) if j == d else slice(0, index.shape[j]) for j in range(x.ndim))
    return d, index, sub


@op
def gather(x, dim, index):
    d, index, sub = _gather_checks("gather", x, dim, index)
    return np.take_along_axis(x[sub], index.astype(np.int64), axis=d)


@op
def scatter(x, dim, index, src):
    d, index, sub = _gather_checks("scatter", x, dim, index)
    if isinstance(src, np.ndarray):
        if src.dtype != x.dtype or src.shape != index.shape:
            fail("scatter", f"src must be a tensor of x's dtype shaped like index, got {src.dtype}{list(src.shape)}")
    elif isinstance(src, (bool, np.bool_)):
        if x.dtype != np.bool_:
            fail("scatter", f"argument 'src' is a bool scalar; an {x.dtype} tensor needs a number")
    elif isinstance(src, (int, np.integer)):
        if x.dtype == np.bool_:
            fail("scatter", "argument 'src' is an int; a bool tensor needs a bool scalar")
        if x.dtype == np.int32 and not -2**31 <= src < 2**31:
            fail("scatter", f"argument 'src' = {src} does not fit an i32 tensor")
    elif isinstance(src, (float, np.floating)):
        if x.dtype != np.float32:
            fail("scatter", f"argument 'src' is a float; an {x.dtype} tensor needs an int scalar")
    else:
        fail("scatter", f"argument 'src' must be a tensor or a scalar, got {type(src).__name__}")
    out = x.copy()
    view = out[sub]
    np.put_along_axis(view, index.astype(np.int64), np.asarray(src, dtype=x.dtype), axis=d)
    return out
