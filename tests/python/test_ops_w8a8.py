"""linear_w8a8 (C++ kernel vs the numpy reference) and its weight layout pack_w8a8.

The integer part (row quantization of x, int32 dot products) is exact in both, so the
two agree to float rounding of the final rescale; against the f32 linear the error is
that of 8-bit activations and weights.
"""
import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import call_op
from tensorvm.pycompiler.quantize import pack_w8a8, quantize_int8, unpack_w8a8

import tensorvm
from op_checks import check_error, one_op_session, vm_call

# Every kernel variant this CPU runs (conftest.py), not only the one it would pick.
pytestmark = pytest.mark.usefixtures("kernel_variant")


def check(*args, **kwargs):
    got = call_op("linear_w8a8", *args, **kwargs)
    want = ref.linear_w8a8(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    scale = max(1.0, float(np.nanmax(np.abs(want)))) if want.size and np.isfinite(want).any() else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale)
    return got


def weight(rng, out, n_in):
    q, s = quantize_int8(rng.standard_normal((out, n_in)).astype(np.float32))
    return q, pack_w8a8(q), s


# Rows 1..4 stream the weights once, more go in groups of 4 over blocks of 64 outputs;
# from 16 rows, CPUs with AMX take tiles of 32 rows x 32 outputs x 64 inputs. Outputs
# that are not a multiple of 16 (or 32) and inputs not a multiple of 4 (or 64) exercise
# the padding.
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 9, 13, 16, 33, 64])
@pytest.mark.parametrize("out, n_in", [(16, 64), (37, 45), (150, 512), (5, 3), (70, 130)])
def test_linear_w8a8_random(rng, rows, out, n_in):
    _, p, s = weight(rng, out, n_in)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    y = check(x, p, s, b)
    assert y.shape == (rows, out)
    check(x, p, s)
    check(x.reshape(1, rows, n_in), p, s, bias=b)


@pytest.mark.parametrize("rows", [1, 4, 9])
def test_linear_w8a8_extreme_values(rows):
    """Full-range weights (-128 included) against rows of +-max|x|: the int16 pair sums of
    the AVX2 kernel (|w| * x * sign(w)) and the int32 sums must not saturate on any variant;
    the integers are exact, so the outputs match the reference to the rescale's rounding."""
    q = np.tile(np.array([-128, 127, -127, 127, 127, 127, -128, -128], np.int8), (35, 9))  # [35, 72]
    s = np.full(35, 0.01, np.float32)
    x = np.tile(np.array([1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0], np.float32), (rows, 9))
    x[::2] *= -3.0
    y = check(x, pack_w8a8(q), s)
    assert np.abs(y).max() > 100  # large sums really happened


def test_linear_w8a8_is_close_to_f32(rng):
    w = rng.standard_normal((64, 256)).astype(np.float32)
    q, s = quantize_int8(w)
    x = rng.standard_normal((6, 256)).astype(np.float32)
    got = call_op("linear_w8a8", x, pack_w8a8(q), s)
    f32 = x @ w.T
    rel = np.abs(got - f32).max() / np.abs(f32).max()
    assert 0 < rel < 0.02, rel


@pytest.mark.parametrize("xs, out", [((0, 8), 5), ((2, 0, 8), 5), ((3, 8), 0), ((3, 0), 4), ((20, 0), 4), ((0,), 3)])
def test_linear_w8a8_zero_size(rng, xs, out):
    x = rng.standard_normal(xs).astype(np.float32)
    q = rng.integers(-127, 128, (out, xs[-1])).astype(np.int8)
    s = rng.random(out).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    y = check(x, pack_w8a8(q), s, b)
    assert y.shape == xs[:-1] + (out,)
    if xs[-1] == 0 and y.size:  # an empty sum: just the bias
        np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))


def test_linear_w8a8_special_rows(rng):
    """A row of zeros gives the bias; a row with NaN or inf gives NaN; huge values scale."""
    _, p, s = weight(rng, 20, 33)
    b = rng.standard_normal(20).astype(np.float32)
    x = rng.standard_normal((5, 33)).astype(np.float32)
    x[0] = 0.0
    x[1, 4] = np.nan
    x[2, 7] = -np.inf
    x[3] *= np.float32(1e30)
    y = check(x, p, s, b)
    np.testing.assert_array_equal(y[0], b)
    assert np.isnan(y[1]).all() and np.isnan(y[2]).all()
    assert np.isfinite(y[3]).all() and np.isfinite(y[4]).all()


def test_linear_w8a8_extreme_int8_weights(rng):
    """All weights -128 or 127 and x at full scale: the int32 sums at their largest."""
    n_in = 4096
    q = np.where(rng.random((24, n_in)) < 0.5, -128, 127).astype(np.int8)
    s = np.full(24, 0.01, np.float32)
    x = np.where(rng.random((3, n_in)) < 0.5, -1.0, 1.0).astype(np.float32)
    check(x, pack_w8a8(q), s)


@pytest.mark.parametrize("rows", [1, 3, 6, 40])
def test_linear_w8a8_threads(rng, rows):
    """Output blocks split over 2 threads give the 1-thread result."""
    _, p, s = weight(rng, 3001, 70)
    x = rng.standard_normal((rows, 70)).astype(np.float32)
    b = rng.standard_normal(3001).astype(np.float32)
    y1 = vm_call("linear_w8a8", x, p, s, b, num_threads=1)
    y2 = vm_call("linear_w8a8", x, p, s, b, num_threads=2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y2, ref.linear_w8a8(x, p, s, b), rtol=1e-5, atol=1e-5)


@pytest.fixture
def amx():
    if not tensorvm._C.cpu_info()["amx"]:
        pytest.skip("linear_w8a8's AMX kernel does not run on this CPU (no amx-int8, or not the best variant)")
    yield
    tensorvm._C.set_amx(True)


@pytest.mark.parametrize("rows", [16, 17, 31, 32, 33, 47, 64, 100])
@pytest.mark.parametrize("out, n_in", [(16, 64), (17, 3), (33, 65), (48, 1000), (150, 512), (5, 130)])
def test_linear_w8a8_amx_is_bit_identical_to_vnni(rng, amx, rows, out, n_in):
    """Exact int32 sums and the same rescale: AMX tiles give the VNNI kernel's floats,
    bit for bit, at every tail of rows (32), outputs (32) and inputs (64)."""
    _, p, s = weight(rng, out, n_in)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    x[rows // 2] *= 1e3  # rows of different scales
    b = rng.standard_normal(out).astype(np.float32)
    got = vm_call("linear_w8a8", x, p, s, b, num_threads=2)
    tensorvm._C.set_amx(False)
    want = vm_call("linear_w8a8", x, p, s, b, num_threads=2)
    tensorvm._C.set_amx(True)
    np.testing.assert_array_equal(got, want)


def test_linear_w8a8_errors(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    q = np.zeros((5, 8), np.int8)
    p, s = pack_w8a8(q), np.ones(5, np.float32)
    check_error("linear_w8a8", x.astype(np.int64), p, s, match="x must be f32")
    check_error("linear_w8a8", x, q, s, match=r"weight must be the packed i8\[1, 2, 64\] of a \[5, 8\] weight")
    check_error("linear_w8a8", x, p.astype(np.int32), s, match="weight must be the packed")
    check_error("linear_w8a8", x[:, :4], p, s, match=r"weight must be the packed i8\[1, 1, 64\] of a \[5, 4\]")
    check_error("linear_w8a8", x, p, np.ones((5, 1), np.float32), match=r"scale must be f32 \[out\]")
    check_error("linear_w8a8", x, p, np.ones(17, np.float32), match=r"of a \[17, 8\] weight")
    check_error("linear_w8a8", x, p, s, np.zeros(4, np.float32), match=r"bias must be f32\[5\]")
    big = np.zeros((1, 40000), np.float32)
    check_error("linear_w8a8", big, pack_w8a8(np.zeros((2, 40000), np.int8)), np.ones(2, np.float32), match="at most 32768 input")


def test_pack_w8a8_layout(rng):
    q = rng.integers(-128, 128, (37, 10)).astype(np.int8)
    p = pack_w8a8(q)
    assert p.dtype == np.int8 and p.shape == (3, 3, 64)
    for j, k in [(0, 0), (15, 3), (16, 4), (36, 9), (20, 7)]:
        assert p[j // 16, k // 4, (j % 16) * 4 + k % 4] == q[j, k]
    assert not p[2, :, (37 - 32) * 4:].any() and not p[:, 2, 2::4].any()  # padding is zero
    np.testing.assert_array_equal(unpack_w8a8(p, 37, 10), q)
    with pytest.raises(ValueError, match="int8 \\[out, in\\]"):
        pack_w8a8(q.astype(np.int16))


@pytest.mark.parametrize("op", ["linear_int8", "linear_w8a8"])
def test_profiler_counts_quantized_linears(rng, op):
    """Multiply-adds rows * out * in and the weight bytes read (the packed weight, padded, and the scales)."""
    q, p, s = weight(rng, 37, 45)
    w = q if op == "linear_int8" else p
    x = rng.standard_normal((3, 45)).astype(np.float32)
    b = rng.standard_normal(37).astype(np.float32)
    session = one_op_session(op, 4)
    prof = tensorvm._C.Profiler()
    session.set_profiler(prof)
    session.run("f", [x, w, s, b])
    stats = prof.ops()[op]
    assert stats["macs"] == stats["weight_macs"] == 3 * 37 * 45
    assert stats["weight_bytes"] == w.nbytes + s.nbytes
