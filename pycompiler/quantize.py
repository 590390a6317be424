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
