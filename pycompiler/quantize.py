"""Offline build step of the `linear_int8` op: weight-only int8 quantization.

`quantize_int8(w)` turns an f32 PyTorch-layout weight [out, in] into the `weight`
(int8 [out, in]) and `scale` (f32 [out]) arguments of `linear_int8(x, weight, scale,
bias)`, which computes x @ (weight * scale[:, None])^T + bias. Symmetric, one scale per
output row (channel): scale = max|w_row| / 127 (rows of zeros get scale 1), q =
clip(round(w / scale), -127, 127), so |w - q * scale| <= scale / 2 per element. The
importer runs this once when writing a model (the runtime never quantizes).
"""
import numpy as np


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
