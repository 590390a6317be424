"""Reference nn ops: norms, embedding, conv1d, log_mel, rotary and attention."""
import numpy as np

from ._common import as_f32, check_index, fail, op, require_f32, widen_16bit


def _norm_checks(name, x, eps, **params):
    require_f32(name, x=x)
    if x.ndim < 1:
        fail(name, "x must have at least 1 dimension")
    for what, p in params.items():
        if p is not None and (not isinstance(p, np.ndarray) or p.dtype != np.float32 or p.shape != (x.shape[-1],)):
            fail(name, f"{what} must be f32[{x.shape[-1]}] (the last dim of x)")
    if not eps >= 0:
        fail(name, f"eps must be >= 0, got {eps}")


@op
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Biased variance, eps inside the sqrt (torch); statistics in float64."""
    _norm_checks("layer_norm", x, eps, weight=weight, bias=bias)
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
    return as_f32(y)


@op
def rms_norm(x, weight=None, eps=1e-6):
    _norm_checks("rms_norm", x, eps, weight=weight)
    if x.shape[-1] == 0:
        return x.copy()
    xd = x.astype(np.float64)
    y = xd / np.sqrt(np.square(xd).mean(-1, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return as_f32(y)


@op
def embedding(ids, weight):
    ids = check_index("embedding", ids, "ids")
    weight = widen_16bit(weight)  # f16 / bf16 rows come out widened to f32
    if not isinstance(weight, np.ndarray) or weight.dtype != np.float32 or weight.ndim != 2:
        fail("embedding", "weight must be f32 [V, D]")
    v = weight.shape[0]
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        fail("embedding", f"id {ids[bad].flat[0]} out of range [0, {v})")
    return weight[ids]


@op
def embedding_int8(ids, weight, scale):
    ids = check_index("embedding_int8", ids, "ids")
    if not isinstance(weight, np.ndarray) or weight.dtype != np.int8 or weight.ndim != 2:
        fail("embedding_int8", "weight must be i8 [V, D]")
    v = weight.shape[0]
    if not isinstance(scale, np.ndarray) or scale.dtype != np.float32 or scale.shape != (v,):
        fail("embedding_int8", f"scale must be f32[{v}]")
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        fail("embedding_int8", f"id {ids[bad].flat[0]} out of range [0, {v})")
    return as_f32(weight[ids].astype(np.float32) * scale[ids][..., None])


@op
def embedding_int4(ids, weight, scale, features):
    """The rows weight[ids] of a 4-bit table (linear_int4's format), dequantized to f32."""
    from .linalg import int4_weight

    ids = check_index("embedding_int4", ids, "ids")
    if features < 0:
        fail("embedding_int4", f"features must be >= 0, got {features}")
    q, s, g = int4_weight("embedding_int4", weight, scale, features)
    v = q.shape[0]
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        fail("embedding_int4", f"id {ids[bad].flat[0]} out of range [0, {v})")
    w = (q.astype(np.float32) * np.repeat(s, g, axis=1))[:, :features] if q.shape[1] else np.zeros((v, features), np.float32)
    return as_f32(w[ids].reshape(ids.shape + (features,)))


@op
def conv1d(x, weight, bias=None, stride=1, padding=0):
    """torch's conv1d (one group, no dilation) as a sum over the kernel taps, in float64."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 3:
        fail("conv1d", "x must be f32 [batch, channels, length]")
    if not isinstance(weight, np.ndarray) or weight.dtype != np.float32 or weight.ndim != 3:
        fail("conv1d", "weight must be f32 [out_channels, in_channels, kernel]")
    if stride < 1:
        fail("conv1d", f"stride must be at least 1, got {stride}")
    if padding < 0:
        fail("conv1d", f"padding must be at least 0, got {padding}")
    batch, cin, length = x.shape
    cout, _, k = weight.shape
    if weight.shape[1] != cin:
        fail("conv1d", f"x has {cin} channels but weight is {weight.shape}")
    if k < 1:
        fail("conv1d", "the kernel size must be at least 1")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != (cout,)):
        fail("conv1d", f"bias must be f32[{cout}]")
    if length + 2 * padding < k:
        fail("conv1d", f"x's length {length} with padding {padding} is shorter than the kernel size {k}")
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding)))
    tout = (length + 2 * padding - k) // stride + 1
    y = np.zeros((batch, cout, tout))
    for j in range(k):
        taps = xp[:, :, j:j + stride * (tout - 1) + 1:stride]  # [batch, cin, tout]
        y += np.einsum("bct,oc->bot", taps, weight[:, :, j].astype(np.float64))
    if bias is not None:
        y += bias[None, :, None]
    return as_f32(y)


@op
def log_mel(audio, filters, n_fft=400, hop_length=160, n_samples=480000):
    """Whisper's log-mel spectrogram, as WhisperFeatureExtractor's numpy path computes it (float64)."""
    if not isinstance(audio, np.ndarray) or audio.dtype != np.float32 or audio.ndim != 2:
        fail("log_mel", "audio must be f32 [batch, samples]")
    if n_fft < 2 or n_fft % 2:
        fail("log_mel", f"n_fft must be even and at least 2, got {n_fft}")
    if hop_length < 1:
        fail("log_mel", f"hop_length must be at least 1, got {hop_length}")
    if n_samples < hop_length or n_samples <= n_fft // 2:
        fail("log_mel", f"n_samples must be at least hop_length and more than n_fft / 2, got {n_samples}")
    bins = n_fft // 2 + 1
    if not isinstance(filters, np.ndarray) or filters.dtype != np.float32 or filters.ndim != 2 \
            or filters.shape[0] != bins:
        fail("log_mel", f"filters must be f32 [{bins}, n_mels] (n_fft / 2 + 1 frequency bins)")
    frames = n_samples // hop_length
    wave = np.zeros((audio.shape[0], n_samples))
    wave[:, :min(audio.shape[1], n_samples)] = audio[:, :n_samples]
    wave = np.pad(wave, ((0, 0), (n_fft // 2, n_fft // 2)), mode="reflect")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    idx = np.arange(frames)[:, None] * hop_length + np.arange(n_fft)[None, :]
    power = np.abs(np.fft.rfft(wave[:, idx] * window, axis=-1)) ** 2  # [batch, frames, bins]
    mel = np.log10(np.maximum(np.einsum("bfk,km->bmf", power, filters.astype(np.float64)), 1e-10))
    top = mel.max(axis=(1, 2), keepdims=True) if mel.size else mel
    return as_f32((np.maximum(mel, top - 8.0) + 4.0) / 4.0)


@op
def rotary(x, positions, inv_freq, scale=1.0):
    """transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb in float32: the angle is
    one f32 product float(position) * inv_freq; cos/sin are taken in float64 of that f32
    angle and rounded to f32, then multiplied by scale in f32."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 4:
        fail("rotary", f"x must be f32 [B, H, T, D], got {getattr(x, 'shape', x)}")
    b, _, t, d = x.shape
    if d % 2:
        fail("rotary", f"x's head dim D must be even (rotate_half splits it in two halves), got {x.shape}")
    if not isinstance(positions, np.ndarray) or positions.dtype != np.int64 or positions.shape != (b, t):
        fail("rotary", f"positions must be i64 [B, T] = [{b}, {t}] (x is {x.shape}), got "
                f"{getattr(positions, 'dtype', None)} {getattr(positions, 'shape', positions)}")
    if not isinstance(inv_freq, np.ndarray) or inv_freq.dtype != np.float32 or inv_freq.shape != (d // 2,):
        fail("rotary", f"inv_freq must be f32 [D / 2] = [{d // 2}], got "
                f"{getattr(inv_freq, 'dtype', None)} {getattr(inv_freq, 'shape', inv_freq)}")
    angle = positions.astype(np.float32)[..., None] * inv_freq  # [B, T, D/2], f32
    s = np.float32(scale)
    cos = np.cos(angle.astype(np.float64)).astype(np.float32) * s
    sin = np.sin(angle.astype(np.float64)).astype(np.float32) * s
    cos = np.concatenate([cos, cos], -1)[:, None]  # [B, 1, T, D]
    sin = np.concatenate([sin, sin], -1)[:, None]
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return as_f32(x * cos + rot * sin)


@op
def attention(q, k, v, mask=None, scale=None):
    """softmax(scale * q k^T + mask) v in float32, like the kernel. A query row whose
    scores are all -inf (every key masked, or no keys) gives zeros, not NaN. k and v
    may have fewer heads (grouped-query): each is repeated H / Hkv times, as
    transformers' repeat_kv."""
    require_f32("attention", q=q, k=k, v=v)
    if q.ndim != 4:
        fail("attention", f"q must be 4-D [B, H, Tq, D], got {q.shape}")
    b, h, tq, d = q.shape
    if k.ndim != 4 or k.shape[0] != b or k.shape[3] != d:
        fail("attention", f"k must be [B, Hkv, Tk, D] = [{b}, Hkv, Tk, {d}] to match q, got {k.shape}")
    hkv = k.shape[1]
    if (h != 0 if hkv == 0 else h % hkv != 0):
        fail("attention", f"k has {hkv} heads, which do not divide q's {h} (grouped-query attention needs "
                f"H % Hkv == 0), got q {q.shape} and k {k.shape}")
    tk = k.shape[2]
    if v.ndim != 4 or v.shape[:3] != (b, hkv, tk):
        fail("attention", f"v must be [B, Hkv, Tk, Dv] = [{b}, {hkv}, {tk}, Dv] to match k, got {v.shape}")
    if hkv != h:
        k, v = np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)
    if scale is None:
        scale = 1.0 / np.sqrt(d) if d > 0 else 1.0
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)):
        fail("attention", f"argument 'scale' must be a float or None, got {scale!r}")
    full = (b, h, tq, tk)
    if mask is not None:
        if not isinstance(mask, np.ndarray) or mask.dtype not in (np.float32, np.bool_):
            fail("attention", "mask must be f32 (additive) or bool (True = attend)")
        ok = mask.ndim <= 4
        if ok:
            try:
                ok = np.broadcast_shapes(mask.shape, full) == full
            except ValueError:
                ok = False
        if not ok:
            fail("attention", f"mask must broadcast to [B, H, Tq, Tk] = {list(full)}, got {mask.shape}")
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
    return as_f32(np.matmul(p, v))
