"""Reference shape ops: reshape, transpose, concat, slice, ... and the shape queries.
The op `slice` shadows the builtin here; Python slices use `builtins.slice`."""
import builtins

import numpy as np

from ._common import check_dim, fail, op


@op
def reshape(x, shape):
    shape = list(shape)
    if sum(1 for s in shape if s == -1) > 1:
        fail("reshape", f"only one dim of shape may be -1, got {shape}")
    if any(s < -1 for s in shape):
        fail("reshape", f"shape {shape} has a negative dim")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or x.size % known:
            fail("reshape", f"cannot reshape x {x.shape} to {shape}")
        shape[shape.index(-1)] = x.size // known
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        fail("reshape", f"cannot reshape x {x.shape} to {shape}")
    return np.reshape(x, shape)


@op
def transpose(x, dim0, dim1):
    d0 = check_dim("transpose", dim0, x.ndim, "dim0")
    d1 = check_dim("transpose", dim1, x.ndim, "dim1")
    return np.array(np.swapaxes(x, d0, d1), order="C")


@op
def permute(x, dims):
    dims = [check_dim("permute", d, x.ndim) for d in dims] if len(dims) == x.ndim else None
    if dims is None or len(set(dims)) != x.ndim:
        fail("permute", f"dims must list each of the {x.ndim} dims of x once")
    return np.array(np.transpose(x, dims), order="C")


@op
def concat(*tensors, dim=0):
    if not tensors:
        fail("concat", "needs at least one tensor")
    t0 = tensors[0]
    if t0.ndim == 0:
        fail("concat", "cannot concat 0-d tensors")
    d = check_dim("concat", dim, t0.ndim)
    for i, t in enumerate(tensors):
        if t.dtype != t0.dtype:
            fail("concat", f"tensors must have the same dtype, got {t0.dtype} (tensors[0]) and {t.dtype} (tensors[{i}])")
        if t.ndim != t0.ndim or any(a != b for j, (a, b) in enumerate(zip(t.shape, t0.shape)) if j != d):
            fail("concat", f"tensors must match in every dim but {d}, got {t0.shape} and {t.shape} (tensors[{i}])")
    return np.concatenate(tensors, axis=d)


@op
def slice(x, dim, start=None, end=None, step=1):  # noqa: A001 (the op's name)
    d = check_dim("slice", dim, x.ndim)
    if step < 1:
        fail("slice", f"step must be >= 1, got {step}")
    idx = [builtins.slice(None)] * x.ndim
    idx[d] = builtins.slice(start, end, step)
    return np.array(x[tuple(idx)], order="C")


@op
def unsqueeze(x, dim):
    if not -x.ndim - 1 <= dim <= x.ndim:
        fail("unsqueeze", f"dim {dim} out of range [{-x.ndim - 1}, {x.ndim}]")
    if x.ndim == 8:
        fail("unsqueeze", "x already has the maximum of 8 dims")
    return np.expand_dims(x, dim)


@op
def squeeze(x, dim):
    d = check_dim("squeeze", dim, x.ndim)
    if x.shape[d] != 1:
        fail("squeeze", f"dim {d} of x {x.shape} has size {x.shape[d]}, not 1")
    return np.squeeze(x, axis=d)


@op
def expand(x, shape):
    shape = list(shape)
    n = len(shape)
    if n < x.ndim:
        fail("expand", f"cannot expand {x.shape} to {shape}: the target has fewer dimensions")
    for i in range(n):
        j = i - (n - x.ndim)
        if shape[i] == -1 and j >= 0:
            shape[i] = x.shape[j]
        if shape[i] < 0:
            fail("expand", f"cannot expand {x.shape} to {shape}: bad size {shape[i]}")
        if j >= 0 and x.shape[j] not in (1, shape[i]):
            fail("expand", f"cannot expand {x.shape} to {shape}")
    return np.array(np.broadcast_to(x, shape), copy=True)


@op
def size(x, dim):
    return int(x.shape[check_dim("size", dim, x.ndim)])


@op
def shape(x):
    return [int(s) for s in x.shape]


@op
def numel(x):
    return int(x.size)


@op
def repeat_interleave(x, repeats, dim):
    d = check_dim("repeat_interleave", dim, x.ndim)
    if repeats < 0:
        fail("repeat_interleave", f"repeats must be >= 0, got {repeats}")
    return np.repeat(x, repeats, axis=d)
