"""C++ kernels against the numpy reference: random inputs, then edge cases."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import call_op
from op_checks import check, check_error, vm_call

# Every kernel variant this CPU runs (conftest.py), not only the one it would pick.
pytestmark = pytest.mark.usefixtures("kernel_variant")


@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 4), (4,), (0, 4), (2, 0, 4)])
def test_linear_random(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    check("linear", x, w, b, atol=1e-5)
    check("linear", x, w, atol=1e-5)


def test_linear_zero_features(rng):
    check("linear", np.zeros((3, 0), np.float32), np.zeros((2, 0), np.float32), np.ones(2, np.float32), atol=1e-5)


def test_linear_large_values(rng):
    x = (rng.standard_normal((3, 8)) * 1e18).astype(np.float32)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    check("linear", x, w, rtol=1e-4, atol=1e14)


def test_linear_errors(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(tensorvm.VMError, match=r"linear: .*weight"):
        call_op("linear", x, np.zeros((5, 3), np.float32))
    with pytest.raises(tensorvm.VMError, match=r"linear: .*bias must be f32\[5\]"):
        call_op("linear", x, np.zeros((5, 4), np.float32), np.zeros(4, np.float32))
    with pytest.raises(tensorvm.VMError, match=r"linear: .*f32"):
        call_op("linear", x.astype(np.int64), np.zeros((5, 4), np.float32))
    with pytest.raises(tensorvm.VMError, match="unknown keyword argument 'bais'"):
        call_op("linear", x, np.zeros((5, 4), np.float32), bais=None)


# 2..8 rows (beam search, batched decoding) take a streaming kernel: SIMD bodies, tails
# of `in` that are not a multiple of the vector width, pairs of output features and an odd one.
# Inputs are scaled by 1/4 so that float32 rounding (summation order differs from numpy's,
# Eigen's GEMM included) stays well within atol 1e-5 at in = 512.
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("outf", [1, 7, 300])
@pytest.mark.parametrize("in_", [512, 100, 17, 1])
@pytest.mark.parametrize("rows", [*range(2, 10), 12, 13, 31, 32, 33])  # 2..8 streaming, 9..32 blocked, 33 GEMM
def test_linear_few_rows(rng, rows, in_, outf, bias):
    x = (rng.standard_normal((rows, in_)) / 4).astype(np.float32)
    w = (rng.standard_normal((outf, in_)) / 4).astype(np.float32)
    args = [x, w] + ([rng.standard_normal(outf).astype(np.float32)] if bias else [])
    want = ref.linear(*args)
    check("linear", *args, atol=1e-5)
    got = vm_call("linear", *args, num_threads=2)
    assert got.dtype == np.float32 and got.shape == (rows, outf)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# More than 32 rows: the register-tiled GEMM (tiles of 12 rows x 32 outputs, inputs in
# slices of 256): row counts off the tile, outputs off the 32-block, inputs over a slice.
@pytest.mark.parametrize("rows", [33, 40, 100])
@pytest.mark.parametrize("in_, outf", [(600, 70), (256, 32), (3, 1), (513, 65)])
@pytest.mark.parametrize("threads", [1, 2])
def test_linear_many_rows(rng, rows, in_, outf, threads):
    x = (rng.standard_normal((rows, in_)) / 4).astype(np.float32)
    w = (rng.standard_normal((outf, in_)) / 4).astype(np.float32)
    b = rng.standard_normal(outf).astype(np.float32)
    got = vm_call("linear", x, w, b, num_threads=threads)
    np.testing.assert_allclose(got, ref.linear(x, w, b), rtol=1e-5, atol=1e-5)
    nobias = vm_call("linear", x, w, num_threads=threads)
    np.testing.assert_allclose(nobias, ref.linear(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [2, 5, 8, 11, 32, 77])
@pytest.mark.parametrize("in_", [64, 17, 300])
def test_linear_few_rows_threads(rng, rows, in_):
    """Output features split over 2 threads (an odd feature at each chunk's end) give the 1-thread result."""
    x = (rng.standard_normal((1, rows, in_)) / 4).astype(np.float32)
    w = (rng.standard_normal((4001, in_)) / 4).astype(np.float32)
    b = rng.standard_normal(4001).astype(np.float32)
    y1 = vm_call("linear", x, w, b, num_threads=1)
    y2 = vm_call("linear", x, w, b, num_threads=2)
    assert y2.shape == (1, rows, 4001)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y2, ref.linear(x, w, b), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- matmul

@pytest.mark.parametrize("xs, ys", [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),            # one shared y: a single GEMM over all rows of x
    ((3, 4), (2, 4, 5)),            # rank mismatch, x broadcast
    ((2, 1, 3, 4), (5, 4, 6)),      # size-1 batch dims on both sides
    ((1, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (1, 1, 4, 5)),      # y with only size-1 batch dims
    ((2, 8, 1, 64), (2, 8, 64, 37)),  # attention-like decode shapes
    ((1, 128, 64), (64, 128)),
])
def test_matmul_random(rng, xs, ys):
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    check("matmul", x, y, atol=1e-5)


@pytest.mark.parametrize("xs, ys", [
    ((0, 4), (4, 5)), ((3, 4), (4, 0)), ((3, 0), (0, 5)), ((0, 3, 4), (4, 5)),
    ((2, 3, 0), (2, 0, 5)), ((0, 3, 4), (1, 4, 5)), ((2, 0, 4), (2, 4, 5)),
])
def test_matmul_zero_size(rng, xs, ys):
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    check("matmul", x, y, atol=1e-5)
    if xs[-1] == 0:
        assert (call_op("matmul", x, y) == 0).all()


def test_matmul_values(rng):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    y = np.array([[5.0, 6.0], [7.0, 8.0]], np.float32)
    np.testing.assert_array_equal(call_op("matmul", x, y), [[19, 22], [43, 50]])
    big = (rng.standard_normal((2, 3, 8)) * 1e18).astype(np.float32)
    check("matmul", big, rng.standard_normal((8, 4)).astype(np.float32), rtol=1e-4, atol=1e14)
    inf = np.array([[np.inf, 1.0]], np.float32)
    check("matmul", inf, np.array([[1.0], [2.0]], np.float32), atol=1e-5)


def test_matmul_errors(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check_error("matmul", x, rng.standard_normal((5, 6)).astype(np.float32), match=r"do not match")
    check_error("matmul", x, np.ones(4, np.float32), match="at least 2 dimensions")
    check_error("matmul", np.ones((), np.float32), x, match="at least 2 dimensions")
    check_error("matmul", x.astype(np.int64), x.T.copy(), match="f32")
    check_error("matmul", np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32), match="do not broadcast")


def _half_dtype(name):
    import ml_dtypes

    return np.float16 if name == "f16" else ml_dtypes.bfloat16


@pytest.mark.parametrize("half", ["f16", "bf16"])
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 8, 9, 17, 33, 70])  # streaming, blocked, GEMM
@pytest.mark.parametrize("in_, outf", [(1, 3), (7, 5), (33, 17), (300, 65)])
def test_linear_16bit_weight(rng, half, rows, in_, outf):
    """A 16-bit weight gives linear's result on the weight widened to f32, bit for bit
    (the kernels widen exactly and keep the f32 arithmetic), and the reference's."""
    w = (rng.standard_normal((outf, in_)) * 0.5).astype(_half_dtype(half))
    if in_ == 33:  # NaN, inf and a subnormal among the weights
        w.reshape(-1)[[0, 5, 9]] = np.array([np.nan, np.inf, 1e-7 if half == "f16" else 1e-40], np.float32).astype(w.dtype)
    x = (rng.standard_normal((rows, in_)) * 0.25).astype(np.float32)
    b = rng.standard_normal(outf).astype(np.float32)
    wide = w.astype(np.float32)
    for args in ((x, w, b), (x, w)):
        got = check("linear", *args, atol=1e-5)
        want = call_op("linear", x, wide, *args[2:])
        np.testing.assert_array_equal(got, want)  # NaN where NaN
    got = call_op("linear_act", x.reshape(1, rows, in_), w, b, "silu")
    np.testing.assert_array_equal(got, call_op("linear_act", x.reshape(1, rows, in_), wide, b, "silu"))


def test_linear_16bit_errors(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = np.zeros((5, 4), np.float16)
    check_error("linear", x.astype(np.float16), w, match=r"x must be f32", ref_match="x must be f32")
    check_error("linear", x, w, np.zeros(5, np.float16), match=r"bias must be f32\[5\]")
    with pytest.raises(tensorvm.VMError, match=r"linear: weight must be f32, f16 or bf16, got i8\[5, 4\]"):
        call_op("linear", x, np.zeros((5, 4), np.int8))
