"""Reference linear algebra: linear, matmul and the quantized linears (linear_int8, linear_w8a8,
linear_int4, linear_w4a8; their build step is pycompiler/quantize.py)."""
import numpy as np

from ._common import OpError, as_f32, fail, op, require_f32, widen_16bit


@op
def linear(x, weight, bias=None):
    weight = widen_16bit(weight)  # f16 / bf16: the kernel widens the weight exactly
    if x.dtype != np.float32 or weight.dtype != np.float32:
        raise OpError("linear: x must be f32 and weight f32, f16 or bf16")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise OpError(f"linear: x {x.shape} does not match weight {weight.shape}")
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != weight.shape[:1]):
        raise OpError(f"linear: bias must be f32[{weight.shape[0]}]")
    y = np.matmul(x, weight.T, dtype=np.float32) if x.shape[-1] else np.zeros(x.shape[:-1] + (weight.shape[0],), np.float32)
    if bias is not None:
        y = y + bias
    return as_f32(y)


@op
def matmul(x, y):
    require_f32("matmul", x=x, y=y)
    if x.ndim < 2 or y.ndim < 2:
        fail("matmul", f"x and y must have at least 2 dimensions, got {x.shape} and {y.shape}")
    if x.shape[-1] != y.shape[-2]:
        fail("matmul", f"x[..., m, k] and y[..., k, n] do not match, got {x.shape} and {y.shape}")
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        fail("matmul", f"batch dimensions of x and y do not broadcast, got {x.shape} and {y.shape}")
    if x.shape[-1] == 0:
        return np.zeros(batch + (x.shape[-2], y.shape[-1]), np.float32)
    return as_f32(np.matmul(x, y))



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
    return as_f32(y)


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
    return as_f32(y.reshape(x.shape[:-1] + (out,)))


# ---------------------------------------------------------------- 4-bit weights
# The format of linear_int4, linear_w4a8 and embedding_int4 (ops/quantized_int4.cpp;
# built by pycompiler/quantize.py quantize_int4): weight i8 [out, in_p / 2], two 4-bit
# q + 8 a byte, each block of 32 inputs in 16 bytes (low nibbles the first 16, high the
# next 16); scale f32 or f16 [out, in_p / G].

def int4_weight(name, weight, scale, n_in):
    """(q int8 [out, in_p], scale as f32 [out, in_p / G], G) after the format's checks."""
    if not isinstance(weight, np.ndarray) or weight.dtype != np.int8 or weight.ndim != 2:
        fail(name, "weight must be i8 [out, in_p / 2]")
    out, in_p = weight.shape[0], 2 * weight.shape[1]
    if not isinstance(scale, np.ndarray) or scale.dtype not in (np.float32, np.float16) or scale.ndim != 2 \
            or scale.shape[0] != out:
        fail(name, f"scale must be f32 or f16 [{out}, in_p / group]")
    scale = scale.astype(np.float32)  # f16 scales widen exactly
    ng = scale.shape[1]
    if in_p == 0 and ng == 0:
        if n_in:
            fail(name, f"{n_in} input features but the weight holds none")
        return np.zeros((out, 0), np.int8), scale, 32
    if ng == 0 or in_p % ng or (in_p // ng) % 32:
        fail(name, "weight and scale do not give a group size that is a multiple of 32")
    g = in_p // ng
    if -(-n_in // g) * g != in_p:
        fail(name, f"{n_in} input features need {-(-n_in // g) * g} padded inputs, but the weight holds {in_p}")
    u = weight.view(np.uint8).reshape(out, in_p // 32, 1, 16)
    q = (np.concatenate([u & 0x0F, u >> 4], axis=2).astype(np.int8) - 8).reshape(out, in_p)
    return q, scale, g


def _int4_linear_checks(name, x, weight, scale, bias):
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim < 1:
        fail(name, "x must be f32 with at least 1 dimension")
    q, s, g = int4_weight(name, weight, scale, x.shape[-1])
    if bias is not None and (not isinstance(bias, np.ndarray) or bias.dtype != np.float32 or bias.shape != (q.shape[0],)):
        fail(name, f"bias must be f32[{q.shape[0]}]")
    return q, s, g


@op
def linear_int4(x, weight, scale, bias=None):
    """x[..., in] @ (q * scale[:, k / G])^T + bias in f32 (q the weight's 4-bit values)."""
    q, s, g = _int4_linear_checks("linear_int4", x, weight, scale, bias)
    n_in, out = x.shape[-1], q.shape[0]
    w = (q.astype(np.float64) * np.repeat(s.astype(np.float64), g, axis=1))[:, :n_in] if n_in else np.zeros((out, 0))
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf in x propagate
        y = np.matmul(x.astype(np.float64), w.T)
    if bias is not None:
        y = y + bias
    return as_f32(y)


@op
def linear_w4a8(x, weight, scale, bias=None):
    """Each row of x quantized per block b of 32 inputs to qx = rint(x * (127 / amax_b))
    (f32 arithmetic), sx_b = amax_b / 127; then y = sum_b sx_b * scale[:, b * 32 / G] *
    (exact integer block sums of qx * q) + bias. A row with NaN or inf gives NaN."""
    q, s, g = _int4_linear_checks("linear_w4a8", x, weight, scale, bias)
    n_in, out, in_p = x.shape[-1], q.shape[0], q.shape[1]
    xs = x.reshape(int(np.prod(x.shape[:-1])), n_in)
    if n_in == 0:
        y = np.zeros((xs.shape[0], out))
    else:
        nb = in_p // 32
        xp = np.zeros((xs.shape[0], in_p), np.float32)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            finite = np.isfinite(xs).all(axis=1)
            xp[:, :n_in] = np.where(finite[:, None], xs, 0)
            blocks = xp.reshape(-1, nb, 32)
            amax = np.abs(blocks).max(axis=2)
            inv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
            qx = np.clip(np.rint(blocks * inv[..., None]), -127, 127).astype(np.int64)
            sx = np.where(finite[:, None], amax / np.float32(127), np.float32(np.nan)).astype(np.float32)
            isum = np.einsum("rbk,obk->rob", qx, q.astype(np.int64).reshape(out, nb, 32))  # exact
            sw = np.repeat(s, g // 32, axis=1)  # [out, nb]
            y = (isum.astype(np.float64) * (sx[:, None, :] * sw[None, :, :]).astype(np.float64)).sum(axis=2)
    if bias is not None:
        y = y + bias
    return as_f32(y.reshape(x.shape[:-1] + (out,)))
