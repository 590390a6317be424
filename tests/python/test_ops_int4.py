"""The 4-bit weight ops (linear_int4, linear_w4a8, embedding_int4: C++ kernels vs the
numpy references) and their build step quantize_int4 / dequantize_int4.

linear_int4 agrees with the reference to float rounding. linear_w4a8's block sums are
exact integers in every variant: with power-of-two scales the whole result is exact.
"""
import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import call_op
from tensorvm.pycompiler.quantize import dequantize_int4, quantize_int4, unpack_int4

from op_checks import check, check_error, check_signature, vm_call

# Every kernel variant this CPU runs (conftest.py), not only the one it would pick.
pytestmark = pytest.mark.usefixtures("kernel_variant")


def close(name, *args, rtol=1e-4):
    got = call_op(name, *args)
    want = ref.OPS[name](*args)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5 * scale, equal_nan=True)
    return got


def weight(rng, out, n_in, g=32, scale_dtype=np.float32):
    w = rng.standard_normal((out, n_in)).astype(np.float32)
    return w, *quantize_int4(w, group_size=g, scale_dtype=scale_dtype)


# Rows 1..8 stream the nibble rows, 9..32 dequantize blocks for the f32 dot kernel, more
# the GEMM; inputs that are not a multiple of 32 (or G) exercise the padding.
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 8, 9, 33])
@pytest.mark.parametrize("out, n_in, g", [(37, 1, 32), (20, 31, 32), (45, 33, 32), (9, 4100, 32), (30, 200, 128),
                                          (17, 256, 128), (6, 300, 64)])
def test_linear_int4_and_w4a8_random(rng, rows, out, n_in, g):
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    for sdt in (np.float32, np.float16):
        _, q, s = weight(rng, out, n_in, g, sdt)
        for name in ("linear_int4", "linear_w4a8"):
            y = close(name, x, q, s, b)
            assert y.shape == (rows, out)
            close(name, x, q, s)
            # f16 scales act as their f32 values, bit for bit
            np.testing.assert_array_equal(y, call_op(name, x, q, s.astype(np.float32), b))


def test_linear_int4_batched_shape(rng):
    _, q, s = weight(rng, 70, 45)
    x = rng.standard_normal((2, 3, 45)).astype(np.float32)
    for name in ("linear_int4", "linear_w4a8"):
        assert close(name, x, q, s).shape == (2, 3, 70)


def test_linear_int4_close_to_float(rng):
    w, q, s = weight(rng, 64, 256)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    wd = dequantize_int4(q, s, 256)
    np.testing.assert_allclose(call_op("linear_int4", x, q, s), x @ wd.T, rtol=1e-4, atol=1e-4)
    err = np.abs(call_op("linear_w4a8", x, q, s) - x @ wd.T).max()
    assert err < 0.1 * np.abs(x @ wd.T).max(), err


@pytest.mark.parametrize("rows", [1, 4, 9])
def test_linear_w4a8_exact_sums(rng, rows):
    """Power-of-two scales and x blocks whose max is 127: every variant's result is the
    exact integer sum (so the block sums are exact and no block is dropped)."""
    out, n_in, g = 19, 4100, 32
    nb = -(-n_in // 32)
    qv = rng.integers(-8, 8, (out, nb * 32)).astype(np.int8)
    qv[:, n_in:] = 0
    u = (qv + 8).astype(np.uint8).reshape(out, nb, 2, 16)
    packed = (u[:, :, 0] | (u[:, :, 1] << 4)).reshape(out, nb * 16).view(np.int8)
    s = (2.0 ** rng.integers(-3, 3, (out, nb))).astype(np.float32)
    xq = rng.integers(-127, 128, (rows, nb * 32))
    xq[:, ::32] = 127  # each block's max is 127, so x quantizes to itself
    x = xq[:, :n_in].astype(np.float32)
    got = call_op("linear_w4a8", x, packed, s)
    sx = np.abs(xq.reshape(rows, nb, 32)).max(axis=2) / 127.0  # 1, except the padded last block
    xs = xq.copy()
    xs[:, n_in:] = 0
    want = np.einsum("rbk,obk,ob->ro", xs.reshape(rows, nb, 32), qv.astype(np.int64).reshape(out, nb, 32), s)
    assert np.all(sx[:, :-1] == 1)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    np.testing.assert_array_equal(got, ref.linear_w4a8(x, packed, s))


def test_linear_int4_zero_groups_and_nonfinite(rng):
    w = rng.standard_normal((40, 100)).astype(np.float32)
    w[3] = 0.0
    w[5, 32:64] = 0.0
    q, s = quantize_int4(w)
    assert not unpack_int4(q)[3].any() and np.all(s[3] == 0) and s[5, 1] == 0
    for rows in (1, 3, 12):
        x = rng.standard_normal((rows, 100)).astype(np.float32)
        x[0, :32] = 0.0  # a zero block of x
        for name in ("linear_int4", "linear_w4a8"):
            y = close(name, x, q, s)
            assert np.all(y[:, 3] == 0)
        x[rows - 1, 7] = np.nan
        x[0, 50] = np.inf
        y = call_op("linear_w4a8", x, q, s)
        assert np.isnan(y[rows - 1]).all() and np.isnan(y[0]).all()
        if rows > 2:
            assert np.isfinite(y[1]).all()
        close("linear_w4a8", x, q, s)
        close("linear_int4", x, q, s)  # NaN/inf propagate as in f32


@pytest.mark.parametrize("xs, out", [((0, 8), 5), ((3, 0), 4), ((20, 0), 4), ((3, 8), 0)])
def test_linear_int4_zero_size(rng, xs, out):
    x = rng.standard_normal(xs).astype(np.float32)
    q, s = quantize_int4(rng.standard_normal((out, xs[-1])).astype(np.float32))
    b = rng.standard_normal(out).astype(np.float32)
    for name in ("linear_int4", "linear_w4a8"):
        y = check(name, x, q, s, b)
        assert y.shape == xs[:-1] + (out,)
        if xs[-1] == 0 and y.size:
            np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))


@pytest.mark.parametrize("name", ["linear_int4", "linear_w4a8"])
def test_linear_int4_errors(rng, name):
    check_signature(name, "linear algebra")
    x = rng.standard_normal((3, 40)).astype(np.float32)
    q, s = quantize_int4(rng.standard_normal((5, 40)).astype(np.float32))  # [5, 32], [5, 2]
    check_error(name, x.astype(np.int64), q, s, match="x must be f32")
    check_error(name, x, q.astype(np.int32), s, match=r"weight must be i8")
    check_error(name, x, q, s.astype(np.int32), match=r"scale must be f32")
    check_error(name, x, q, s[:4], match=r"scale must be f32")
    check_error(name, x, q, np.ones((5, 4), np.float32), match="group size that is a multiple of 32")
    assert close(name, x, q, s[:, :1]).shape == (3, 5)  # one group of 64 inputs
    check_error(name, x, q, np.ones((5, 3), np.float32), match="multiple of 32")
    check_error(name, x[:, :20], q, s, match="32 padded inputs")
    check_error(name, np.zeros((3, 65), np.float32), q, s, match="padded inputs")
    check_error(name, x, q, s, np.zeros(4, np.float32), match=r"bias must be f32\[5\]")


def test_embedding_int4(rng):
    check_signature("embedding_int4", "nn")
    for n_in, g in ((1, 32), (33, 32), (200, 128), (896, 32)):
        w, q, s = weight(rng, 50, n_in, g)
        for dt in (np.int64, np.int32):
            ids = rng.integers(0, 50, (2, 7)).astype(dt)
            y = check("embedding_int4", ids, q, s, n_in, rtol=1e-6, atol=0)
            np.testing.assert_array_equal(y, dequantize_int4(q, s, n_in)[ids])
            s16 = s.astype(np.float16)
            y16 = check("embedding_int4", ids, q, s16, n_in, rtol=1e-6, atol=0)
            np.testing.assert_array_equal(y16, dequantize_int4(q, s16, n_in)[ids])
    check_error("embedding_int4", np.array([0, 50]), q, s, 896, match=r"id 50 out of range \[0, 50\)")
    check_error("embedding_int4", np.array([-1]), q, s, 896, match=r"id -1 out of range")
    check_error("embedding_int4", np.array([0.0], np.float32), q, s, 896, match="ids must be i64 or i32")
    check_error("embedding_int4", np.array([0]), q, s, 800, match="padded inputs")


def test_threads(rng):
    """Outputs split over 2 threads give the 1-thread result exactly (f16 scales too)."""
    _, q, s = weight(rng, 3001, 96)
    _, q16, s16 = weight(rng, 3001, 96, scale_dtype=np.float16)
    for (q, s), rows in [((q, s), r) for r in (1, 5, 40)] + [((q16, s16), r) for r in (1, 5, 40)]:
        x = rng.standard_normal((rows, 96)).astype(np.float32)
        for name in ("linear_int4", "linear_w4a8"):
            one = vm_call(name, x, q, s, num_threads=1)
            np.testing.assert_array_equal(one, vm_call(name, x, q, s, num_threads=2))
            np.testing.assert_array_equal(one, call_op(name, x, q, s))


# ---------------------------------------------------------------- quantize_int4

@pytest.mark.parametrize("g", [32, 64, 128, 256])
def test_quantize_int4_round_trip(rng, g):
    w = rng.standard_normal((12, 300)).astype(np.float32) * 3
    w[2, 5] = -40.0  # the group's extreme maps to -8 exactly
    w[4, 9] = 40.0   # ... with its sign: +40 -> d = -5, q = -8
    q, s = quantize_int4(w, group_size=g)
    in_p = -(-300 // g) * g
    assert q.dtype == np.int8 and q.shape == (12, in_p // 2) and s.dtype == np.float32 and s.shape == (12, in_p // g)
    qv = unpack_int4(q)
    assert qv.min() >= -8 and qv.max() <= 7 and not qv[:, 300:].any()
    assert qv[2, 5] == -8 and s[2, 5 // g] == 5.0 and qv[4, 9] == -8 and s[4, 9 // g] == -5.0
    wd = dequantize_int4(q, s, 300)
    err = np.abs(w - wd)
    d = np.repeat(np.abs(s), g, axis=1)[:, :300]
    # half a step, except values of the other sign past 7.5 steps, clamped to 7: one step
    clamped = qv[:, :300] == 7
    assert np.all(err[~clamped] <= d[~clamped] / 2 * (1 + 1e-5)), err.max()
    assert np.all(err <= d * (1 + 1e-5)), err.max()


def test_quantize_int4_layout():
    """Byte i of a block: q[i] + 8 low, q[16 + i] + 8 high (llama.cpp q4_0's order)."""
    w = np.zeros((1, 32), np.float32)
    w[0, 0], w[0, 16], w[0, 1] = -8.0, 7.0, 1.0  # d = 1
    q, s = quantize_int4(w)
    assert s[0, 0] == 1.0
    b = q.view(np.uint8)[0]
    assert b[0] == (0 | (15 << 4)) and b[1] == (9 | (8 << 4)) and b[2] == (8 | (8 << 4))


def test_quantize_int4_f16_scales(rng):
    w = rng.standard_normal((4, 64)).astype(np.float32)
    q, s = quantize_int4(w, scale_dtype=np.float16)
    assert s.dtype == np.float16
    assert np.abs(dequantize_int4(q, s, 64) - w).max() <= np.abs(s.astype(np.float32)).max() * 0.51


def test_quantize_int4_rejects_bad_input():
    with pytest.raises(ValueError, match="quantize_int4: weight must be 2-D"):
        quantize_int4(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="quantize_int4: weight has non-finite"):
        quantize_int4(np.array([[1.0, np.inf]], np.float32))
    for g in (0, 16, 48, 33.0, True):
        with pytest.raises(ValueError, match="quantize_int4: group_size must be"):
            quantize_int4(np.zeros((2, 4), np.float32), group_size=g)
    with pytest.raises(ValueError, match="quantize_int4: scale_dtype"):
        quantize_int4(np.zeros((2, 4), np.float32), scale_dtype=np.int8)
    with pytest.raises(ValueError, match="dequantize_int4: .* do not pad"):
        q, s = quantize_int4(np.zeros((2, 40), np.float32))
        dequantize_int4(q, s, 70)
    q, s = quantize_int4(np.zeros((3, 0), np.float32))
    assert q.shape == (3, 0) and s.shape == (3, 0)
