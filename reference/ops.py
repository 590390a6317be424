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
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != weight.shape[:1]):
        raise OpError(f"linear: bias must be f32[{weight.shape[0]}]")
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
def conv1d(x, weight, bias=None, stride=1, padding=0):
    """torch's conv1d (one group, no dilation) as a sum over the kernel taps, in float64."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 3:
        _b_fail("conv1d", "x must be f32 [batch, channels, length]")
    if not isinstance(weight, np.ndarray) or weight.dtype != np.float32 or weight.ndim != 3:
        _b_fail("conv1d", "weight must be f32 [out_channels, in_channels, kernel]")
    if stride < 1:
        _b_fail("conv1d", f"stride must be at least 1, got {stride}")
    if padding < 0:
        _b_fail("conv1d", f"padding must be at least 0, got {padding}")
    batch, cin, length = x.shape
    cout, _, k = weight.shape
    if weight.shape[1] != cin:
        _b_fail("conv1d", f"x has {cin} channels but weight is {weight.shape}")
    if k < 1:
        _b_fail("conv1d", "the kernel size must be at least 1")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != (cout,)):
        _b_fail("conv1d", f"bias must be f32[{cout}]")
    if length + 2 * padding < k:
        _b_fail("conv1d", f"x's length {length} with padding {padding} is shorter than the kernel size {k}")
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding)))
    tout = (length + 2 * padding - k) // stride + 1
    y = np.zeros((batch, cout, tout))
    for j in range(k):
        taps = xp[:, :, j:j + stride * (tout - 1) + 1:stride]  # [batch, cin, tout]
        y += np.einsum("bct,oc->bot", taps, weight[:, :, j].astype(np.float64))
    if bias is not None:
        y += bias[None, :, None]
    return _f32(y)


@op
def log_mel(audio, filters, n_fft=400, hop_length=160, n_samples=480000):
    """Whisper's log-mel spectrogram, as WhisperFeatureExtractor's numpy path computes it (float64)."""
    if not isinstance(audio, np.ndarray) or audio.dtype != np.float32 or audio.ndim != 2:
        _b_fail("log_mel", "audio must be f32 [batch, samples]")
    if n_fft < 2 or n_fft % 2:
        _b_fail("log_mel", f"n_fft must be even and at least 2, got {n_fft}")
    if hop_length < 1:
        _b_fail("log_mel", f"hop_length must be at least 1, got {hop_length}")
    if n_samples < hop_length or n_samples <= n_fft // 2:
        _b_fail("log_mel", f"n_samples must be at least hop_length and more than n_fft / 2, got {n_samples}")
    bins = n_fft // 2 + 1
    if not isinstance(filters, np.ndarray) or filters.dtype != np.float32 or filters.ndim != 2 \
            or filters.shape[0] != bins:
        _b_fail("log_mel", f"filters must be f32 [{bins}, n_mels] (n_fft / 2 + 1 frequency bins)")
    frames = n_samples // hop_length
    wave = np.zeros((audio.shape[0], n_samples))
    wave[:, :min(audio.shape[1], n_samples)] = audio[:, :n_samples]
    wave = np.pad(wave, ((0, 0), (n_fft // 2, n_fft // 2)), mode="reflect")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    idx = np.arange(frames)[:, None] * hop_length + np.arange(n_fft)[None, :]
    power = np.abs(np.fft.rfft(wave[:, idx] * window, axis=-1)) ** 2  # [batch, frames, bins]
    mel = np.log10(np.maximum(np.einsum("bfk,km->bmf", power, filters.astype(np.float64)), 1e-10))
    top = mel.max(axis=(1, 2), keepdims=True) if mel.size else mel
    return _f32((np.maximum(mel, top - 8.0) + 4.0) / 4.0)


@op
def rotary(x, positions, inv_freq, scale=1.0):
    """transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb in float32: the angle is
    one f32 product float(position) * inv_freq; cos/sin are taken in float64 of that f32
    angle and rounded to f32, then multiplied by scale in f32."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 4:
        _b_fail("rotary", f"x must be f32 [B, H, T, D], got {getattr(x, 'shape', x)}")
    b, _, t, d = x.shape
    if d % 2:
        _b_fail("rotary", f"x's head dim D must be even (rotate_half splits it in two halves), got {x.shape}")
    if not isinstance(positions, np.ndarray) or positions.dtype != np.int64 or positions.shape != (b, t):
        _b_fail("rotary", f"positions must be i64 [B, T] = [{b}, {t}] (x is {x.shape}), got "
                f"{getattr(positions, 'dtype', None)} {getattr(positions, 'shape', positions)}")
    if not isinstance(inv_freq, np.ndarray) or inv_freq.dtype != np.float32 or inv_freq.shape != (d // 2,):
        _b_fail("rotary", f"inv_freq must be f32 [D / 2] = [{d // 2}], got "
                f"{getattr(inv_freq, 'dtype', None)} {getattr(inv_freq, 'shape', inv_freq)}")
    angle = positions.astype(np.float32)[..., None] * inv_freq  # [B, T, D/2], f32
    s = np.float32(scale)
    cos = np.cos(angle.astype(np.float64)).astype(np.float32) * s
    sin = np.sin(angle.astype(np.float64)).astype(np.float32) * s
    cos = np.concatenate([cos, cos], -1)[:, None]  # [B, 1, T, D]
    sin = np.concatenate([sin, sin], -1)[:, None]
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return _f32(x * cos + rot * sin)


@op
def attention(q, k, v, mask=None, scale=None):
    """softmax(scale * q k^T + mask) v in float32, like the kernel. A query row whose
    scores are all -inf (every key masked, or no keys) gives zeros, not NaN. k and v
    may have fewer heads (grouped-query): each is repeated H / Hkv times, as
    transformers' repeat_kv."""
    _b_f32("attention", q=q, k=k, v=v)
    if q.ndim != 4:
        _b_fail("attention", f"q must be 4-D [B, H, Tq, D], got {q.shape}")
    b, h, tq, d = q.shape
    if k.ndim != 4 or k.shape[0] != b or k.shape[3] != d:
        _b_fail("attention", f"k must be [B, Hkv, Tk, D] = [{b}, Hkv, Tk, {d}] to match q, got {k.shape}")
    hkv = k.shape[1]
    if (h != 0 if hkv == 0 else h % hkv != 0):
        _b_fail("attention", f"k has {hkv} heads, which do not divide q's {h} (grouped-query attention needs "
                f"H % Hkv == 0), got q {q.shape} and k {k.shape}")
    tk = k.shape[2]
    if v.ndim != 4 or v.shape[:3] != (b, hkv, tk):
        _b_fail("attention", f"v must be [B, Hkv, Tk, Dv] = [{b}, {hkv}, {tk}, Dv] to match k, got {v.shape}")
    if hkv != h:
        k, v = np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)
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


# =============================================================================
# Section A: elementwise, reductions, creation.
# Ops whose names are Python builtins (abs, pow, max, min, sum, any, all) are defined
# as _a_<name> and registered in OPS under the op name only, so that the builtins keep
# working in this module; this section calls builtins through `_a_bi` because other
# sections may shadow some (e.g. `slice`).
# =============================================================================
import builtins as _a_bi  # noqa: E402
import math as _a_math  # noqa: E402
import warnings as _a_warnings  # noqa: E402

_A_DTYPES = {"f32": np.float32, "i64": np.int64, "i32": np.int32, "bool": np.bool_}
_A_NAMES = {np.dtype(v): k for k, v in _A_DTYPES.items()}
_A_NUMERIC = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int32))
_A_I64_MIN, _A_I64_MAX = -(2**63), 2**63 - 1


def _a_op(name):
    """Registers a reference op under `name` (which may differ from the function's)."""
    def deco(fn):
        OPS[name] = fn
        return fn
    return deco


def _a_fail(name, msg):
    raise OpError(f"{name}: {msg}")


def _a_is_tensor(v):
    return isinstance(v, np.ndarray)


def _a_scalar(v):
    """A Python scalar from an int/float/bool (numpy scalars included), else None."""
    if isinstance(v, np.generic):
        v = v.item()
    return v if isinstance(v, (bool, int, float)) else None


def _a_desc(v):
    if _a_is_tensor(v):
        return f"{_A_NAMES.get(v.dtype, str(v.dtype))}{list(v.shape)}"
    return repr(v)


def _a_check_dtype(name, what, t, allowed=None):
    if t.dtype not in _A_NAMES:
        _a_fail(name, f"{what} has unsupported dtype {t.dtype}")
    if allowed is not None and t.dtype not in [np.dtype(a) for a in allowed]:
        _a_fail(name, f"{what} must be {' or '.join(_A_NAMES[np.dtype(a)] for a in allowed)}, got {_a_desc(t)}")


def _a_scalar_to(name, what, v, dtype):
    """The operand rules: int -> f32/i64/i32 (range-checked), float -> f32, bool -> bool."""
    s = _a_scalar(v)
    dtype = np.dtype(dtype)
    if s is None:
        _a_fail(name, f"{what} must be an int, float or bool scalar, got {type(v).__name__}")
    if dtype == np.float32:
        if isinstance(s, bool):
            _a_fail(name, f"{what} is a bool scalar; an f32 tensor needs an int or float")
        with np.errstate(over="ignore"):
            return np.float32(s)
    if dtype in (np.int64, np.int32):
        if isinstance(s, bool) or not isinstance(s, int):
            _a_fail(name, f"{what} is {s!r}; an {_A_NAMES[dtype]} tensor needs an int scalar")
        if dtype == np.int32 and not -(2**31) <= s < 2**31:
            _a_fail(name, f"{what} = {s} does not fit an i32 tensor")
        return dtype.type(s)
    if dtype == np.bool_:
        if not isinstance(s, bool):
            _a_fail(name, f"{what} is {s!r}; a bool tensor needs a bool scalar")
        return np.bool_(s)
    _a_fail(name, f"dtype {dtype} is not supported")


def _a_broadcast(name, *shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        _a_fail(name, f"cannot broadcast shapes {' and '.join(str(list(s)) for s in shapes)}")


def _a_operands(name, x, y):
    """(a, b, dtype, shape) for tensor∘tensor or tensor∘scalar; a, b are arrays of dtype."""
    for what, v in (("x", x), ("y", y)):
        if _a_is_tensor(v):
            _a_check_dtype(name, what, v)
        elif _a_scalar(v) is None:
            _a_fail(name, f"{what} must be a tensor or a scalar, got {type(v).__name__}")
    if _a_is_tensor(x) and _a_is_tensor(y):
        if x.dtype != y.dtype:
            _a_fail(name, f"x and y must have the same dtype, got {_a_desc(x)} and {_a_desc(y)}")
        dt = x.dtype
        shape = _a_broadcast(name, x.shape, y.shape)
    else:
        t = x if _a_is_tensor(x) else y
        dt, shape = t.dtype, t.shape
    a = x if _a_is_tensor(x) else np.asarray(_a_scalar_to(name, "x", x, dt))
    b = y if _a_is_tensor(y) else np.asarray(_a_scalar_to(name, "y", y, dt))
    return a, b, dt, shape


def _a_check_i64(name, r):
    if not _A_I64_MIN <= r <= _A_I64_MAX:
        _a_fail(name, "integer overflow (scalar ints are int64)")
    return r


def _a_scalar_arith(name, a, b):
    """Python semantics on int64/float scalars, as the C++ kernels define them."""
    if isinstance(a, bool) or isinstance(b, bool):
        _a_fail(name, f"x and y must be int or float scalars or tensors, got {a!r} and {b!r}")
    if isinstance(a, int) and isinstance(b, int):
        if name == "add":
            return _a_check_i64(name, a + b)
        if name == "sub":
            return _a_check_i64(name, a - b)
        if name == "mul":
            return _a_check_i64(name, a * b)
        if name == "div":
            if b == 0:
                _a_fail(name, "division by zero")
            return float(a) / float(b)
        if name == "pow":
            if b < 0:
                if a == 0:
                    _a_fail(name, "0 cannot be raised to a negative power")
                return float(a) ** float(b)
            if _a_bi.abs(a) > 1 and b >= 64:
                _a_fail(name, "integer overflow (scalar ints are int64)")
            return _a_check_i64(name, a**b)
        if name == "maximum":
            return a if a > b else b
        if name == "minimum":
            return a if a < b else b
        if name == "floordiv":
            if b == 0:
                _a_fail(name, "integer division by zero")
            return _a_check_i64(name, a // b)
        if name == "remainder":
            if b == 0:
                _a_fail(name, "integer modulo by zero")
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
            _a_fail(name, "float division by zero")
        return a / b
    if name == "pow":
        if a == 0 and b < 0 and _a_math.isfinite(b):
            _a_fail(name, "0.0 cannot be raised to a negative power")
        if a < 0 and _a_math.isfinite(a) and _a_math.isfinite(b) and b != _a_math.floor(b):
            _a_fail(name, f"a negative base to a fractional power has no real result ({a} ** {b})")
        try:
            return _a_math.pow(a, b)
        except OverflowError:
            _a_fail(name, f"result out of range ({a} ** {b})")
    if name == "maximum":
        return a if (a > b or a != a) else b
    if name == "minimum":
        return a if (a < b or a != a) else b
    if name in ("floordiv", "remainder"):
        if b == 0:
            _a_fail(name, "float floor division by zero" if name == "floordiv" else "float modulo by zero")
        return a // b if name == "floordiv" else a % b
    raise AssertionError(name)


def _a_arith(name, x, y):
    if not _a_is_tensor(x) and not _a_is_tensor(y):
        a, b = _a_scalar(x), _a_scalar(y)
        if a is None or b is None:
            _a_fail(name, f"x and y must be tensors or scalars, got {type(x).__name__} and {type(y).__name__}")
        return _a_scalar_arith(name, a, b)
    tn, t = ("x", x) if _a_is_tensor(x) else ("y", y)
    if name in ("div", "pow") and t.dtype != np.float32:
        extra = " (use floordiv for integer division)" if name == "div" else ""
        _a_fail(name, f"{tn} must be f32{extra}, got {_a_desc(t)}")
    if t.dtype not in _A_NUMERIC:
        _a_fail(name, f"{tn} must be f32, i64 or i32, got {_a_desc(t)}")
    a, b, dt, shape = _a_operands(name, x, y)
    is_int = dt != np.float32
    with np.errstate(all="ignore"):
        if name == "add":
            r = np.add(a, b)
        elif name == "sub":
            r = np.subtract(a, b)
        elif name == "mul":
            r = np.multiply(a, b)
        elif name == "div":
            r = np.true_divide(a, b)
        elif name == "pow":
            r = np.power(a, b)
        elif name == "maximum":
            r = np.maximum(a, b)
        elif name == "minimum":
            r = np.minimum(a, b)
        elif name in ("floordiv", "remainder"):
            if is_int and int(np.prod(shape)) > 0 and (np.asarray(b) == 0).any():
                _a_fail(name, "integer division by zero (y has a zero element)")
            if (is_int and name == "floordiv" and int(np.prod(shape)) > 0
                    and ((np.asarray(a) == np.iinfo(dt).min) & (np.asarray(b) == -1)).any()):
                dname = {np.dtype(v): k for k, v in _A_DTYPES.items()}[np.dtype(dt)]
                _a_fail(name, f"integer overflow: the smallest {dname} divided by -1 (x has it where y is -1)")
            r = np.floor_divide(a, b) if name == "floordiv" else np.remainder(a, b)
        else:
            raise AssertionError(name)
    return np.array(np.broadcast_to(r, shape), dtype=dt)


@op
def add(x, y):
    return _a_arith("add", x, y)


@op
def sub(x, y):
    return _a_arith("sub", x, y)


@op
def mul(x, y):
    return _a_arith("mul", x, y)


@op
def div(x, y):
    return _a_arith("div", x, y)


@_a_op("pow")
def _a_pow(x, y):
    return _a_arith("pow", x, y)


@op
def maximum(x, y):
    return _a_arith("maximum", x, y)


@op
def minimum(x, y):
    return _a_arith("minimum", x, y)


@op
def floordiv(x, y):
    return _a_arith("floordiv", x, y)


@op
def remainder(x, y):
    return _a_arith("remainder", x, y)


_A_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _a_compare(name, x, y):
    if not _a_is_tensor(x) and not _a_is_tensor(y):
        a, b = _a_scalar(x), _a_scalar(y)
        if a is None or b is None:
            _a_fail(name, f"x and y must be tensors or scalars, got {type(x).__name__} and {type(y).__name__}")
        if isinstance(a, bool) != isinstance(b, bool):
            _a_fail(name, f"x and y must both be bools or both be numbers, got {a!r} and {b!r}")
        if not (isinstance(a, int) and isinstance(b, int)):
            a, b = float(a), float(b)
        return bool(_A_CMP[name](a, b))
    a, b, dt, shape = _a_operands(name, x, y)
    return np.array(np.broadcast_to(_A_CMP[name](a, b), shape), dtype=np.bool_)


@op
def eq(x, y):
    return _a_compare("eq", x, y)


@op
def ne(x, y):
    return _a_compare("ne", x, y)


@op
def lt(x, y):
    return _a_compare("lt", x, y)


@op
def le(x, y):
    return _a_compare("le", x, y)


@op
def gt(x, y):
    return _a_compare("gt", x, y)


@op
def ge(x, y):
    return _a_compare("ge", x, y)


def _a_logic_operand(name, what, v):
    if _a_is_tensor(v):
        if v.dtype != np.bool_:
            _a_fail(name, f"{what} must be a bool tensor or a bool, got {_a_desc(v)}")
        return v
    s = _a_scalar(v)
    if not isinstance(s, bool):
        _a_fail(name, f"{what} must be a bool tensor or a bool, got {v!r}")
    return s


def _a_logical(name, fn, x, y):
    a, b = _a_logic_operand(name, "x", x), _a_logic_operand(name, "y", y)
    if not _a_is_tensor(a) and not _a_is_tensor(b):
        return bool(fn(a, b))
    shape = _a_broadcast(name, np.shape(a), np.shape(b))
    return np.array(np.broadcast_to(fn(a, b), shape), dtype=np.bool_)


@op
def logical_and(x, y):
    return _a_logical("logical_and", np.logical_and, x, y)


@op
def logical_or(x, y):
    return _a_logical("logical_or", np.logical_or, x, y)


@op
def logical_xor(x, y):
    return _a_logical("logical_xor", np.logical_xor, x, y)


@op
def logical_not(x):
    a = _a_logic_operand("logical_not", "x", x)
    return (not a) if isinstance(a, bool) else np.asarray(np.logical_not(a))


# ---- unary


def _a_f32_in(name, x):
    if not _a_is_tensor(x) or x.dtype != np.float32:
        _a_fail(name, f"x must be f32, got {_a_desc(x)}")
    return x


def _a_unary_f32(name, x, fn):
    x = _a_f32_in(name, x)
    with np.errstate(all="ignore"):
        return np.asarray(fn(x), dtype=np.float32)


_a_erf64 = np.vectorize(_a_math.erf, otypes=[np.float64])


@op
def exp(x):
    return _a_unary_f32("exp", x, np.exp)


@op
def log(x):
    return _a_unary_f32("log", x, np.log)


@op
def sqrt(x):
    return _a_unary_f32("sqrt", x, np.sqrt)


@op
def rsqrt(x):
    return _a_unary_f32("rsqrt", x, lambda v: np.float32(1) / np.sqrt(v))


@op
def tanh(x):
    return _a_unary_f32("tanh", x, np.tanh)


@op
def sigmoid(x):
    return _a_unary_f32("sigmoid", x, lambda v: np.float32(1) / (np.float32(1) + np.exp(-v)))


@op
def silu(x):
    return _a_unary_f32("silu", x, lambda v: v / (np.float32(1) + np.exp(-v)))


@op
def erf(x):
    return _a_unary_f32("erf", x, lambda v: _a_erf64(v.astype(np.float64)))


@op
def gelu(x, approximate="none"):
    x = _a_f32_in("gelu", x)
    if approximate == "none":
        return _a_unary_f32("gelu", x, lambda v: v * 0.5 * (1 + _a_erf64(v.astype(np.float64) / _a_math.sqrt(2))))
    if approximate == "tanh":
        def f(v):
            v = v.astype(np.float64)
            return 0.5 * v * (1 + np.tanh(_a_math.sqrt(2 / _a_math.pi) * (v + 0.044715 * v**3)))
        return _a_unary_f32("gelu", x, f)
    _a_fail("gelu", f'approximate must be "none" or "tanh", got "{approximate}"')


def _a_numeric_in(name, x):
    if not _a_is_tensor(x) or x.dtype not in _A_NUMERIC:
        _a_fail(name, f"x must be f32, i64 or i32, got {_a_desc(x)}")
    return x


def _a_int_or_float(name, x):
    s = _a_scalar(x)
    if s is None or isinstance(s, bool):
        _a_fail(name, f"x must be a tensor or an int/float scalar, got {x!r}")
    return s


@op
def neg(x):
    if not _a_is_tensor(x):
        s = _a_int_or_float("neg", x)
        return _a_check_i64("neg", -s) if isinstance(s, int) else -s
    x = _a_numeric_in("neg", x)
    with np.errstate(all="ignore"):
        return np.asarray(np.negative(x))


@_a_op("abs")
def _a_abs(x):
    if not _a_is_tensor(x):
        s = _a_int_or_float("abs", x)
        return _a_check_i64("abs", _a_bi.abs(s)) if isinstance(s, int) else _a_bi.abs(s)
    x = _a_numeric_in("abs", x)
    with np.errstate(all="ignore"):
        return np.asarray(np.abs(x))


@op
def relu(x):
    x = _a_numeric_in("relu", x)
    return np.where(x <= 0, x.dtype.type(0), x).astype(x.dtype)


# ---- selection


@op
def where(cond, x, y):
    if not _a_is_tensor(cond) or cond.dtype != np.bool_:
        _a_fail("where", f"cond must be a bool tensor, got {_a_desc(cond)}")
    if not _a_is_tensor(x) and not _a_is_tensor(y):
        a, b = _a_scalar(x), _a_scalar(y)
        if a is None or b is None:
            _a_fail("where", "x and y must be tensors or scalars")
        if isinstance(a, bool) != isinstance(b, bool):
            _a_fail("where", f"x and y must both be bools or both be numbers, got {a!r} and {b!r}")
        dt = np.bool_ if isinstance(a, bool) else np.float32 if (isinstance(a, float) or isinstance(b, float)) else np.int64
        xa, ya = np.asarray(_a_scalar_to("where", "x", a, dt)), np.asarray(_a_scalar_to("where", "y", b, dt))
    else:
        xa, ya, dt, _ = _a_operands("where", x, y)
    shape = _a_broadcast("where", cond.shape, xa.shape, ya.shape)
    return np.array(np.broadcast_to(np.where(cond, xa, ya), shape), dtype=dt)


@op
def masked_fill(x, mask, value):
    if not _a_is_tensor(x):
        _a_fail("masked_fill", f"x must be a tensor, got {type(x).__name__}")
    _a_check_dtype("masked_fill", "x", x)
    if not _a_is_tensor(mask) or mask.dtype != np.bool_:
        _a_fail("masked_fill", f"mask must be a bool tensor, got {_a_desc(mask)}")
    if _a_broadcast("masked_fill", x.shape, mask.shape) != tuple(x.shape):
        _a_fail("masked_fill", f"mask {_a_desc(mask)} does not broadcast to the shape of x {_a_desc(x)}")
    if _a_scalar(value) is None:
        _a_fail("masked_fill", f"value must be an int, float or bool scalar, got {type(value).__name__}")
    v = _a_scalar_to("masked_fill", "value", value, x.dtype)
    return np.where(mask, v, x).astype(x.dtype)


@op
def clamp(x, min=None, max=None):  # noqa: A002 (the op's parameter names)
    lo, hi = min, max
    if not _a_is_tensor(x):
        _a_fail("clamp", f"x must be a tensor, got {type(x).__name__}")
    if lo is None and hi is None:
        _a_fail("clamp", "at least one of min and max must not be None")
    for what, b in (("min", lo), ("max", hi)):
        if b is None:
            continue
        s = _a_scalar(b)
        if s is None or isinstance(s, bool):
            _a_fail("clamp", f"{what} must be an int or float scalar or None, got {b!r}")
        if isinstance(s, float) and _a_math.isnan(s):
            _a_fail("clamp", f"{what} must not be NaN")
    x = _a_numeric_in("clamp", x)
    r = x
    if lo is not None:
        lv = _a_scalar_to("clamp", "min", lo, x.dtype)
        r = np.where(r < lv, lv, r)
    if hi is not None:
        hv = _a_scalar_to("clamp", "max", hi, x.dtype)
        r = np.where(r > hv, hv, r)
    return np.asarray(r, dtype=x.dtype).copy()


# ---- reductions


def _a_tensor_in(name, x):
    if not _a_is_tensor(x):
        _a_fail(name, f"x must be a tensor, got {type(x).__name__}")
    _a_check_dtype(name, "x", x)
    return x


def _a_norm_dim(name, x, d):
    n = _a_bi.max(x.ndim, 1)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        _a_fail(name, f"dim must be an int, got {d!r}")
    d = int(d)
    if not -n <= d < n:
        _a_fail(name, f"dim {d} is out of range for x {_a_desc(x)} (expected {-n}..{n - 1})")
    return d + n if d < 0 else d


def _a_axes(name, x, dim):
    """The reduced axes as a tuple (all for None); a 0-d x accepts 0/-1 and reduces nothing."""
    if dim is None:
        return tuple(range(x.ndim))
    dims = [dim] if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) else list(dim)
    if not dims:
        _a_fail(name, "dim must name at least one dimension (None reduces all), got []")
    axes = []
    for d in dims:
        a = _a_norm_dim(name, x, d)
        if x.ndim == 0:
            continue
        if a in axes:
            _a_fail(name, f"dim {d} is repeated in {dims}")
        axes.append(a)
    return tuple(axes)


def _a_reduced(x, axes, keepdim):
    """(out_shape, reduced count)."""
    out = [1 if i in axes else s for i, s in enumerate(x.shape) if keepdim or i not in axes]
    count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    return tuple(out), count


@_a_op("sum")
def _a_sum(x, dim=None, keepdim=False):
    x = _a_tensor_in("sum", x)
    axes = _a_axes("sum", x, dim)
    if x.dtype == np.float32:
        return np.asarray(np.sum(x.astype(np.float64), axis=axes, keepdims=keepdim), dtype=np.float32)
    return np.asarray(np.sum(x.astype(np.int64), axis=axes, keepdims=keepdim), dtype=np.int64)


@op
def mean(x, dim=None, keepdim=False):
    x = _a_tensor_in("mean", x)
    if x.dtype != np.float32:
        _a_fail("mean", f"x must be f32, got {_a_desc(x)}")
    axes = _a_axes("mean", x, dim)
    with np.errstate(all="ignore"), _a_warnings.catch_warnings():
        _a_warnings.simplefilter("ignore", RuntimeWarning)  # the mean of nothing is NaN
        r = np.mean(x.astype(np.float64), axis=axes, keepdims=keepdim)
    return np.asarray(r, dtype=np.float32)


def _a_extreme(name, fn, x, dim, keepdim):
    x = _a_tensor_in(name, x)
    if x.dtype not in _A_NUMERIC:
        _a_fail(name, f"x must be f32, i64 or i32, got {_a_desc(x)}")
    axes = _a_axes(name, x, dim)
    out_shape, count = _a_reduced(x, axes, keepdim)
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return np.zeros(out_shape, x.dtype)
    if count == 0:
        _a_fail(name, f"cannot reduce over a zero-size dimension of x {_a_desc(x)}")
    return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=x.dtype)


@_a_op("max")
def _a_max(x, dim=None, keepdim=False):
    return _a_extreme("max", np.max, x, dim, keepdim)


@_a_op("min")
def _a_min(x, dim=None, keepdim=False):
    return _a_extreme("min", np.min, x, dim, keepdim)


def _a_anyall(name, fn, x, dim, keepdim):
    x = _a_tensor_in(name, x)
    if x.dtype != np.bool_:
        _a_fail(name, f"x must be a bool tensor, got {_a_desc(x)}")
    axes = _a_axes(name, x, dim)
    return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=np.bool_)


@_a_op("any")
def _a_any(x, dim=None, keepdim=False):
    return _a_anyall("any", np.any, x, dim, keepdim)


@_a_op("all")
def _a_all(x, dim=None, keepdim=False):
    return _a_anyall("all", np.all, x, dim, keepdim)


def _a_argext(name, fn, x, dim, keepdim):
    x = _a_tensor_in(name, x)
    if x.dtype not in _A_NUMERIC:
        _a_fail(name, f"x must be f32, i64 or i32, got {_a_desc(x)}")
    d = _a_norm_dim(name, x, dim)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    out_shape, count = _a_reduced(x, (d,), keepdim)
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return np.zeros(out_shape, np.int64)
    if count == 0:
        _a_fail(name, f"cannot reduce over a zero-size dimension of x {_a_desc(x)}")
    # numpy returns the first extreme, and the first NaN if there is one (like the kernel).
    return np.asarray(fn(x, axis=d, keepdims=keepdim), dtype=np.int64)


@op
def argmax(x, dim=-1, keepdim=False):
    return _a_argext("argmax", np.argmax, x, dim, keepdim)


@op
def argmin(x, dim=-1, keepdim=False):
    return _a_argext("argmin", np.argmin, x, dim, keepdim)


def _a_softmax(name, x, dim, log):
    """Row max subtracted; float32 exp, float64 sum. A row that is all -inf (or holds
    NaN or +inf) gives NaN everywhere in the row, like torch."""
    x = _a_f32_in(name, x)
    d = _a_norm_dim(name, x, dim)
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
    return _a_softmax("softmax", x, dim, False)


@op
def log_softmax(x, dim=-1):
    return _a_softmax("log_softmax", x, dim, True)


@op
def topk(x, k, dim=-1, largest=True):
    """Sorted best first; ties to the lower index; NaN is larger than everything."""
    x = _a_tensor_in("topk", x)
    if x.dtype not in _A_NUMERIC:
        _a_fail("topk", f"x must be f32, i64 or i32, got {_a_desc(x)}")
    d = _a_norm_dim("topk", x, dim)
    zero_d = x.ndim == 0
    xv = x.reshape(1) if zero_d else x
    n = xv.shape[d]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        _a_fail("topk", f"k = {k} is out of range for a dimension of size {n} (x {_a_desc(x)})")
    if zero_d and k != 1:
        _a_fail("topk", f"k = {k}: a 0-d x has one element and needs k = 1")
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
    x = _a_tensor_in("cumsum", x)
    d = _a_norm_dim("cumsum", x, dim)
    xv = x.reshape(1) if x.ndim == 0 else x
    if x.dtype == np.float32:
        r = np.cumsum(xv.astype(np.float64), axis=d).astype(np.float32)
    else:
        r = np.cumsum(xv.astype(np.int64), axis=d)
    return r.reshape(x.shape)


@op
def item(x):
    x = _a_tensor_in("item", x)
    if x.size != 1:
        _a_fail("item", f"x must have exactly one element, got {_a_desc(x)}")
    v = x.reshape(-1)[0]
    if x.dtype == np.float32:
        return float(v)
    if x.dtype == np.bool_:
        return bool(v)
    return int(v)


# ---- creation


def _a_dtype(name, dtype, what="dtype"):
    if not isinstance(dtype, str) or dtype not in _A_DTYPES:
        _a_fail(name, f'{what} must be "f32", "i64", "i32" or "bool", got {dtype!r}')
    return np.dtype(_A_DTYPES[dtype])


def _a_opt_dtype(name, dtype, default):
    return np.dtype(default) if dtype is None else _a_dtype(name, dtype)


def _a_shape(name, shape):
    shape = [shape] if isinstance(shape, (int, np.integer)) else list(shape)
    if _a_bi.any(s < 0 for s in shape):
        _a_fail(name, f"shape must not have negative sizes, got {shape}")
    return tuple(int(s) for s in shape)


def _a_int_arg(name, what, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        _a_fail(name, f"argument '{what}' must be an int, got {v!r}")
    return int(v)


@op
def arange(start, end, step=1, dtype="i64"):
    start, end, step = (_a_int_arg("arange", w, v) for w, v in (("start", start), ("end", end), ("step", step)))
    dt = _a_dtype("arange", dtype)
    if dt == np.bool_:
        _a_fail("arange", 'dtype must be "i64", "i32" or "f32", got "bool"')
    if step == 0:
        _a_fail("arange", "step must not be zero")
    n = _a_bi.max(0, (end - start + step - 1) // step if step > 0 else (start - end - step - 1) // -step)
    if n > 2**40:
        _a_fail("arange", f"arange({start}, {end}, {step}) is too long")
    if dt == np.int32 and n > 0:
        last = start + (n - 1) * step
        if not (-(2**31) <= start < 2**31 and -(2**31) <= last < 2**31):
            _a_fail("arange", f"arange({start}, {end}, {step}) has values outside the i32 range")
    return (start + np.arange(n, dtype=np.int64) * step).astype(dt)


def _a_filled(name, shape, value, dt):
    if _a_scalar(value) is None:
        _a_fail(name, f"value must be an int, float or bool scalar, got {type(value).__name__}")
    return np.full(shape, _a_scalar_to(name, "value", value, dt), dtype=dt)


@op
def full(shape, value, dtype="f32"):
    return _a_filled("full", _a_shape("full", shape), value, _a_dtype("full", dtype))


@op
def zeros(shape, dtype="f32"):
    return np.zeros(_a_shape("zeros", shape), _a_dtype("zeros", dtype))


@op
def ones(shape, dtype="f32"):
    return np.ones(_a_shape("ones", shape), _a_dtype("ones", dtype))


@op
def full_like(x, value, dtype=None):
    x = _a_tensor_in("full_like", x)
    return _a_filled("full_like", x.shape, value, _a_opt_dtype("full_like", dtype, x.dtype))


@op
def zeros_like(x, dtype=None):
    x = _a_tensor_in("zeros_like", x)
    return np.zeros(x.shape, _a_opt_dtype("zeros_like", dtype, x.dtype))


@op
def cast(x, dtype):
    """float -> int truncates toward zero (NaN, inf, out of range: error); i64 -> i32
    wraps; to bool is x != 0; bool -> numbers is 0/1; the same dtype returns x."""
    x = _a_tensor_in("cast", x)
    dt = _a_dtype("cast", dtype)
    if dt == x.dtype:
        return x
    if dt == np.bool_:
        return np.asarray(x != 0)
    if x.dtype == np.float32 and dt != np.float32:
        t = np.trunc(x.astype(np.float64))
        bits = 63 if dt == np.int64 else 31
        with np.errstate(invalid="ignore"):
            ok = (t >= -(2.0**bits)) & (t < 2.0**bits)
        if not ok.all():
            i = int(np.flatnonzero(~ok.reshape(-1))[0])
            _a_fail("cast", f"x has the value {x.reshape(-1)[i]} at flat index {i}, which cannot be cast to {dtype}")
        return np.asarray(t.astype(dt))
    return np.asarray(x.astype(dt))


@op
def tensor(value, dtype=None):
    s = _a_scalar(value)
    if s is None:
        _a_fail("tensor", f"value must be an int, float or bool scalar, got {type(value).__name__}")
    default = np.bool_ if isinstance(s, bool) else np.int64 if isinstance(s, int) else np.float32
    dt = _a_opt_dtype("tensor", dtype, default)
    return np.asarray(_a_scalar_to("tensor", "value", s, dt), dtype=dt).reshape(())


# =============================================================================
# Section Q: quantized ops (linear_int8, linear_w8a8; their build step is pycompiler/quantize.py).
# =============================================================================

@op
def linear_int8(x, weight, scale, bias=None):
    """x[..., in] @ (weight[out, in] (int8) * scale[out, None])^T + bias[out] in f32."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim < 1:
        raise OpError("linear_int8: x must be f32 with at least 1 dimension")
    if not isinstance(weight, np.ndarray) or weight.dtype != np.int8 or weight.ndim != 2:
        raise OpError("linear_int8: weight must be i8 [out, in]")
    if x.shape[-1] != weight.shape[1]:
        raise OpError(f"linear_int8: x {x.shape} does not match weight {weight.shape}")
    out = weight.shape[0]
    if not isinstance(scale, np.ndarray) or scale.dtype != np.float32 or scale.shape != (out,):
        raise OpError(f"linear_int8: scale must be f32[{out}]")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != (out,)):
        raise OpError(f"linear_int8: bias must be f32[{out}]")
    w = weight.astype(np.float32) * scale[:, None]
    y = np.matmul(x, w.T, dtype=np.float32) if x.shape[-1] else np.zeros(x.shape[:-1] + (out,), np.float32)
    if bias is not None:
        y = y + bias
    return _f32(y)


@op
def linear_w8a8(x, weight, scale, bias=None):
    """Each row of x quantized to q = rint(x * 127 / max|x_row|), then
    (q @ W^T) in exact integers * (max|x_row| / 127) * scale + bias in f32, where W is
    the int8 [out, in] weight that `weight` packs (pycompiler/quantize.py pack_w8a8)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim < 1:
        raise OpError("linear_w8a8: x must be f32 with at least 1 dimension")
    if not isinstance(scale, np.ndarray) or scale.dtype != np.float32 or scale.ndim != 1:
        raise OpError("linear_w8a8: scale must be f32 [out]")
    out, n_in = scale.shape[0], x.shape[-1]
    if n_in > 1 << 15:
        raise OpError(f"linear_w8a8: at most {1 << 15} input features, got {n_in}")
    packed = (-(-out // 16), -(-n_in // 4), 64)
    if not isinstance(weight, np.ndarray) or weight.dtype != np.int8 or weight.shape != packed:
        raise OpError(f"linear_w8a8: weight must be the packed i8{list(packed)} of a [{out}, {n_in}] weight")
    # unpack: [nb, kb, 16, 4] -> [nb * 16, kb * 4] -> [out, in]
    nb, kb = packed[0], packed[1]
    weight = weight.reshape(nb, kb, 16, 4).transpose(0, 2, 1, 3).reshape(nb * 16, kb * 4)[:out, :n_in]
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != (out,)):
        raise OpError(f"linear_w8a8: bias must be f32[{out}]")
    xs = x.reshape(int(np.prod(x.shape[:-1])), n_in)
    if n_in == 0:
        y = np.zeros((xs.shape[0], out), np.float32)
    else:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            finite = np.isfinite(xs).all(axis=1)
            amax = np.where(finite, np.abs(np.where(np.isfinite(xs), xs, 0)).max(axis=1), 0).astype(np.float32)
            inv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
            q = np.clip(np.rint(np.where(np.isfinite(xs), xs, 0) * inv[:, None]), -127, 127).astype(np.int64)
            acc = q @ weight.astype(np.int64).T
            sx = np.where(finite, amax / np.float32(127), np.float32(np.nan)).astype(np.float32)
            y = acc.astype(np.float32) * (sx[:, None] * scale[None, :])
    if bias is not None:
        y = y + bias
    return _f32(y.reshape(x.shape[:-1] + (out,)))


# =============================================================================
# Section F: fused ops (what the graph passes in pycompiler/passes/fuse.py put in place of
# two ops). Each is, by definition, the two ops one after the other; an error of either is
# reported under the fused op's name.
# =============================================================================

def _f_compose(name, fn):
    try:
        return fn()
    except OpError as e:
        raise OpError(f"{name}: {e}") from None


@op
def add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    return _f_compose("add_layer_norm", lambda: layer_norm(add(x, residual), weight, bias, eps))


@op
def add_rms_norm(x, residual, weight=None, eps=1e-6):
    return _f_compose("add_rms_norm", lambda: rms_norm(add(x, residual), weight, eps))


@op
def log_softmax_masked(x, banned):
    if _a_is_tensor(x) and x.ndim >= 1 and (not _a_is_tensor(banned) or banned.dtype != np.bool_
                                            or banned.shape != (x.shape[-1],)):
        raise OpError(f"log_softmax_masked: banned must be bool [{x.shape[-1]}] (x's last dimension), "
                      f"got {_a_desc(banned)}")
    return _f_compose("log_softmax_masked", lambda: masked_fill(log_softmax(x, -1), banned, -_a_math.inf))


_F_ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "silu": silu, "gelu": gelu}


@op
def linear_act(x, weight, bias, activation):
    if activation not in _F_ACTIVATIONS:
        raise OpError(f'linear_act: activation must be "relu", "sigmoid", "silu" or "gelu", got "{activation}"')
    return _f_compose("linear_act", lambda: _F_ACTIVATIONS[activation](linear(x, weight, bias)))
