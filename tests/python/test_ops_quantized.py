"""linear_int8 (C++ kernel vs the numpy reference) and its build step quantize_int8."""
import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import call_op
from tensorvm.pycompiler.quantize import quantize_int8
from op_checks import check, check_error, vm_call

# Every kernel variant this CPU runs (conftest.py), not only the one it would pick.
pytestmark = pytest.mark.usefixtures("kernel_variant")


def qweight(rng, out, inf):
    return quantize_int8(rng.standard_normal((out, inf)).astype(np.float32))


# Row counts 1..8 take the streaming decode path, 9..32 dequantized blocks with the f32
# blocked dot kernel, more dequantized blocks with Eigen's GEMM; feature counts that are
# not multiples of 16/32 exercise the SIMD tails.
@pytest.mark.parametrize("shape", [(45,), (1, 64), (3, 100), (8, 33), (9, 64), (2, 5, 45), (4, 10, 70), (1, 1, 7),
                                   (32, 37), (33, 40)])
def test_linear_int8_random(rng, shape):
    q, s = qweight(rng, 150, shape[-1])
    x = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(150).astype(np.float32)
    y = check("linear_int8", x, q, s, b, rtol=1e-4, atol=1e-4)
    assert y.shape == shape[:-1] + (150,)
    check("linear_int8", x, q, s, rtol=1e-4, atol=1e-4)
    check("linear_int8", x, q, s, bias=b, rtol=1e-4, atol=1e-4)


def test_linear_int8_many_blocks(rng):
    """Several 64-row blocks with a partial last one, on the blocked-dot and GEMM paths."""
    q, s = qweight(rng, 200, 48)
    for rows in (30, 50):
        x = rng.standard_normal((rows, 48)).astype(np.float32)
        check("linear_int8", x, q, s, rng.standard_normal(200).astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs, out", [((0, 8), 5), ((2, 0, 8), 5), ((3, 8), 0), ((3, 0), 4), ((20, 0), 4), ((0,), 3)])
def test_linear_int8_zero_size(rng, xs, out):
    x = rng.standard_normal(xs).astype(np.float32)
    q = rng.integers(-127, 128, (out, xs[-1])).astype(np.int8)
    s = rng.random(out).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    y = check("linear_int8", x, q, s, b, atol=1e-5)
    assert y.shape == xs[:-1] + (out,)
    if xs[-1] == 0 and y.size:  # an empty sum: just the bias
        np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))
    check("linear_int8", x, q, s, atol=1e-5)


def test_linear_int8_large_values(rng):
    for rows in (2, 12):
        x = (rng.standard_normal((rows, 40)) * 1e18).astype(np.float32)
        q, s = qweight(rng, 7, 40)
        s = s * np.float32(1e10)
        check("linear_int8", x, q, s, rtol=1e-4, atol=1e25)


def test_linear_int8_matches_f32_linear_on_dequantized(rng):
    w = rng.standard_normal((33, 20)).astype(np.float32)
    q, s = quantize_int8(w)
    x = rng.standard_normal((3, 20)).astype(np.float32)
    got = call_op("linear_int8", x, q, s)
    np.testing.assert_allclose(got, call_op("linear", x, q.astype(np.float32) * s[:, None]), rtol=1e-4, atol=1e-4)
    # ... and it is close to, but not exactly, the unquantized linear
    np.testing.assert_allclose(got, x @ w.T, atol=0.1)
    assert not np.array_equal(got, call_op("linear", x, w))


def test_linear_int8_errors(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    q = np.zeros((5, 4), np.int8)
    s = np.ones(5, np.float32)
    check_error("linear_int8", x.astype(np.int64), q, s, match="x must be f32")
    check_error("linear_int8", x, q.astype(np.float32), s, match=r"weight must be i8")
    check_error("linear_int8", x, q.astype(np.int32), s, match=r"weight must be i8")
    check_error("linear_int8", x, np.zeros(4, np.int8), s, match=r"weight must be i8 \[out, in\]")
    check_error("linear_int8", x, np.zeros((5, 3), np.int8), s, match="x has 4 features", ref_match="")
    check_error("linear_int8", x, q, np.ones(4, np.float32), match=r"scale must be f32\[5\]")
    check_error("linear_int8", x, q, np.ones((5, 1), np.float32), match=r"scale must be f32\[5\]")
    check_error("linear_int8", x, q, np.ones(5, np.int64), match=r"scale must be f32\[5\]")
    check_error("linear_int8", x, q, s, np.zeros(4, np.float32), match=r"bias must be f32\[5\]")
    check_error("linear_int8", x, q, s, np.zeros(5, np.int32), match=r"bias must be f32\[5\]")


# ---------------------------------------------------------------- quantize_int8

def test_quantize_int8_round_trip(rng):
    w = rng.standard_normal((40, 33)).astype(np.float32) * rng.random((40, 1)).astype(np.float32) * 10
    w[3] = 0.0          # a zero row gets scale 1
    w[5, 7] = -123.0    # an outlier row
    q, s = quantize_int8(w)
    assert q.dtype == np.int8 and q.shape == w.shape and s.dtype == np.float32 and s.shape == (40,)
    assert s[3] == 1.0 and not q[3].any()
    assert np.all(np.abs(q) <= 127) and q.min() >= -127
    assert np.all(np.abs(q).max(axis=1)[np.arange(40) != 3] == 127)  # the full range is used
    err = np.abs(w - q.astype(np.float32) * s[:, None])
    assert np.all(err <= s[:, None] / 2 * (1 + 1e-5)), err.max()
    np.testing.assert_allclose(s[5], 123.0 / 127, rtol=1e-6)


def test_quantize_int8_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        quantize_int8(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="non-finite"):
        quantize_int8(np.array([[1.0, np.inf]], np.float32))
    q, s = quantize_int8(np.zeros((3, 0), np.float32))
    assert q.shape == (3, 0) and np.array_equal(s, np.ones(3, np.float32))


# ---------------------------------------------------------------- threads

@pytest.mark.parametrize("rows", [1, 3, 20, 40])
def test_linear_int8_threads(rng, rows):
    """Output features split over 2 threads (decode path and block GEMM) give the 1-thread result."""
    q, s = qweight(rng, 3000, 70)
    x = rng.standard_normal((rows, 70)).astype(np.float32)
    b = rng.standard_normal(3000).astype(np.float32)
    y1 = vm_call("linear_int8", x, q, s, b, num_threads=1)
    y2 = vm_call("linear_int8", x, q, s, b, num_threads=2)
    assert y1.shape == (rows, 3000)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y2, ref.linear_int8(x, q, s, b), rtol=1e-4, atol=1e-4)


# embedding_int8: rows of a table stored as linear_int8's weight and scale (a tied matrix stored once)

@pytest.mark.parametrize("ids_shape", [(5,), (2, 3), (1, 1), (0,), (2, 0)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_embedding_int8_random(rng, ids_shape, dtype):
    q, s = qweight(rng, 37, 45)
    ids = rng.integers(0, 37, ids_shape).astype(dtype)
    y = check("embedding_int8", ids, q, s, rtol=0, atol=0)
    assert y.shape == ids_shape + (45,)
    # the same rows linear_int8 multiplies with: the dequantized table
    np.testing.assert_array_equal(y, call_op("embedding", ids, q.astype(np.float32) * s[:, None]))


def test_embedding_int8_edges(rng):
    q, s = qweight(rng, 4, 0)  # zero-width rows
    assert check("embedding_int8", np.array([0, 3]), q, s).shape == (2, 0)
    q = np.array([[127, -127, 0]], np.int8)
    s = np.array([3.0e38 / 127], np.float32)
    check("embedding_int8", np.array([0, 0]), q, s, rtol=1e-6)


def test_embedding_int8_errors(rng):
    q, s = qweight(rng, 5, 4)
    check_error("embedding_int8", np.array([5]), q, s, match=r"id 5 out of range \[0, 5\)")
    check_error("embedding_int8", np.array([-1]), q, s, match=r"id -1 out of range")
    check_error("embedding_int8", np.array([0.0], np.float32), q, s, match="ids must be")
    check_error("embedding_int8", np.array([0]), q.astype(np.float32), s, match=r"weight must be i8 \[V, D\]")
    check_error("embedding_int8", np.array([0]), q[0], s, match=r"weight must be i8 \[V, D\]")
    check_error("embedding_int8", np.array([0]), q, s[:4], match=r"scale must be f32\[5\]")
    check_error("embedding_int8", np.array([0]), q, s.astype(np.int32), match=r"scale must be f32\[5\]")
