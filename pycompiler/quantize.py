"""Offline build step of the `linear_int8` and `linear_w8a8` ops: int8 weights.

`quantize_int8(w)` turns an f32 PyTorch-layout weight [out, in] into the `weight`
(int8 [out, in]) and `scale` (f32 [out]) arguments of `linear_int8(x, weight, scale,
bias)`, which computes x @ (weight * scale[:, None])^T + bias. Symmetric, one scale per
output row (channel): scale = max|w_row| / 127 (rows of zeros get scale 1), q =
clip(round(w / scale), -127, 127), so |w - q * scale| <= scale / 2 per element. The
importer runs this once when writing a model (the runtime never quantizes weights).
`pack_w8a8(q)` lays the same int8 weight out for linear_w8a8's VNNI kernel.
"""
import numpy as np

# import_hf(..., quantize=...) / `tensorvm import-hf --quantize`
QUANTIZATIONS = {
    "int8": "linear weights int8 per output row, activations f32 (linear_int8, weight-only)",
    "w8a8": "linear weights int8 per output row, activations int8 per row at run time (linear_w8a8, AVX-512 VNNI)",
    "int4": "linear weights int4 in groups of --group-size inputs (q4_0 layout), activations f32 (linear_int4); "
            "embeddings and output projection int8 unless --tables int4",
    "w4a8": "linear weights int4 in groups (q4_0 layout), activations int8 per block of 32 at run time "
            "(linear_w4a8, as llama.cpp's q4_0 x q8_0); embeddings and output projection int8 unless --tables w4a8",
    "f16": "linear weights and tables f16, widened to f32 in the kernels (linear, embedding)",
    "bf16": "linear weights and tables bf16, widened to f32 in the kernels (linear, embedding)",
}


def quantize_int8(weight: np.ndarray):
    """Returns (q int8 [out, in], scale f32 [out]) with weight ~= q * scale[:, None]."""
    w = np.asarray(weight, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"quantize_int8: weight must be 2-D [out, in], got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("quantize_int8: weight has non-finite values")
    amax = np.abs(w).max(axis=1) if w.shape[1] else np.zeros(w.shape[0], np.float32)
    scale = (amax / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1.0  # zero rows (and underflowing scales) quantize to zeros
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


# linear_w8a8's weight layout: 4 consecutive inputs of 16 consecutive outputs per 64-byte
# vector, the operand layout of AVX-512 VNNI's vpdpbusd (see ops/quantized_w8a8.cpp).
W8A8_OUT, W8A8_IN = 16, 4


def pack_w8a8(q: np.ndarray) -> np.ndarray:
    """int8 [out, in] -> int8 [ceil(out/16), ceil(in/4), 64], zero-padded, with
    packed[jb, kq, 4 * jj + t] = q[16 * jb + jj, 4 * kq + t]: the `weight` of linear_w8a8
    (its `scale` is quantize_int8's)."""
    q = np.asarray(q)
    if q.dtype != np.int8 or q.ndim != 2:
        raise ValueError(f"pack_w8a8: weight must be int8 [out, in], got {q.dtype} {q.shape}")
    out, n_in = q.shape
    nb, kb = -(-out // W8A8_OUT), -(-n_in // W8A8_IN)
    padded = np.zeros((nb * W8A8_OUT, kb * W8A8_IN), np.int8)
    padded[:out, :n_in] = q
    # [nb, 16, kb, 4] -> [nb, kb, 16, 4]
    return np.ascontiguousarray(padded.reshape(nb, W8A8_OUT, kb, W8A8_IN).transpose(0, 2, 1, 3).reshape(nb, kb, 64))


def unpack_w8a8(packed: np.ndarray, out: int, n_in: int) -> np.ndarray:
    """The inverse of pack_w8a8: int8 [out, in]."""
    nb, kb = packed.shape[0], packed.shape[1]
    full = packed.reshape(nb, kb, W8A8_OUT, W8A8_IN).transpose(0, 2, 1, 3).reshape(nb * W8A8_OUT, kb * W8A8_IN)
    return np.ascontiguousarray(full[:out, :n_in])


# ---------------------------------------------------------------- 4-bit weights
# linear_int4, linear_w4a8 and embedding_int4 (ops/quantized_int4.cpp) share one format,
# llama.cpp q4_0's rule and nibble order: per group of G inputs (G a multiple of 32) the
# element m of largest |w| (with its sign) gives d = m / -8 and q = clip(rint(w / d), -8, 7),
# so m itself maps to -8 exactly and the rest to [-8, 7]. Each block of 32 inputs
# k0 .. k0 + 31 packs into 16 bytes, byte i = (q[k0 + i] + 8) | ((q[k0 + 16 + i] + 8) << 4):
# the low nibbles are the block's first 16 inputs, the high ones the next 16. Rows are
# zero-padded to in_p = ceil(in / G) * G inputs.
INT4_BLOCK = 32


def _int4_group(fn, group_size):
    if not isinstance(group_size, (int, np.integer)) or isinstance(group_size, bool) or group_size < INT4_BLOCK \
            or group_size % INT4_BLOCK:
        raise ValueError(f"{fn}: group_size must be a positive multiple of {INT4_BLOCK}, got {group_size!r}")
    return int(group_size)


def quantize_int4(weight: np.ndarray, group_size: int = 32, scale_dtype=np.float32):
    """f32 [out, in] -> (packed int8 [out, in_p / 2], scale [out, in_p / group_size]) with
    in_p = ceil(in / group_size) * group_size: the `weight` and `scale` of linear_int4,
    linear_w4a8 and embedding_int4. scale_dtype: np.float32 or np.float16 (q4_0's; q is
    rounded against the scale as stored)."""
    g = _int4_group("quantize_int4", group_size)
    w = np.asarray(weight, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"quantize_int4: weight must be 2-D [out, in], got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("quantize_int4: weight has non-finite values")
    sdt = np.dtype(scale_dtype)
    if sdt not in (np.dtype(np.float32), np.dtype(np.float16)):
        raise ValueError(f"quantize_int4: scale_dtype must be float32 or float16, got {sdt}")
    out, n_in = w.shape
    in_p = -(-n_in // g) * g
    wp = np.zeros((out, in_p), np.float32)
    wp[:, :n_in] = w
    groups = wp.reshape(out, in_p // g, g)
    idx = np.abs(groups).argmax(axis=2) if in_p else np.zeros((out, 0), np.int64)
    m = np.take_along_axis(groups, idx[..., None], axis=2)[..., 0]
    d = (m / np.float32(-8)).astype(sdt)  # the scale as stored, and what q is rounded against
    df = d.astype(np.float32)
    nz = (df != 0)[..., None]
    q = np.where(nz, np.clip(np.rint(groups / np.where(nz, df[..., None], 1)), -8, 7), 0).astype(np.int16).reshape(out, in_p // INT4_BLOCK, 2, 16) + 8
    packed = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).astype(np.uint8).reshape(out, in_p // 2)
    return packed.view(np.int8), d


def unpack_int4(packed: np.ndarray) -> np.ndarray:
    """The int8 values q in [-8, 7], [out, in_p], of quantize_int4's packed weight."""
    p = np.asarray(packed)
    if p.dtype != np.int8 or p.ndim != 2:
        raise ValueError(f"unpack_int4: weight must be int8 [out, in_p / 2], got {p.dtype} {p.shape}")
    out, half = p.shape
    if half % (INT4_BLOCK // 2):
        raise ValueError(f"unpack_int4: weight has {half} bytes a row, not a multiple of {INT4_BLOCK // 2}")
    u = p.view(np.uint8).reshape(out, half // 16, 1, 16)
    q = np.concatenate([u & 0x0F, u >> 4], axis=2).astype(np.int8) - 8
    return q.reshape(out, 2 * half)


def dequantize_int4(packed: np.ndarray, scale: np.ndarray, in_features: int) -> np.ndarray:
    """f32 [out, in_features] from quantize_int4's (packed, scale)."""
    q = unpack_int4(packed)
    s = np.asarray(scale)
    out, in_p = q.shape
    if s.ndim != 2 or s.shape[0] != out or s.dtype not in (np.float32, np.float16) or (in_p and (
            s.shape[1] == 0 or in_p % s.shape[1] or (in_p // s.shape[1]) % INT4_BLOCK)):
        raise ValueError(f"dequantize_int4: scale must be f32/f16 [{out}, in_p / group] with group a multiple of "
                         f"{INT4_BLOCK}, got {s.dtype} {s.shape}")
    g = in_p // s.shape[1] if in_p else INT4_BLOCK
    if -(-int(in_features) // g) * g != in_p:
        raise ValueError(f"dequantize_int4: {in_features} input features do not pad to the weight's {in_p} in groups "
                         f"of {g}")
    w = q.astype(np.float32) * np.repeat(s.astype(np.float32), g, axis=1) if in_p else q.astype(np.float32)
    return np.ascontiguousarray(w[:, :in_features])
