"""C++ kernels against the numpy reference: random inputs, then edge cases."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import call_op


def check(name, *args, rtol=1e-5, atol=1e-5, **kwargs):
    got = call_op(name, *args, **kwargs)
    want = getattr(ref, name)(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 4), (4,), (0, 4), (2, 0, 4)])
def test_linear_random(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    check("linear", x, w, b)
    check("linear", x, w)


def test_linear_zero_features(rng):
    check("linear", np.zeros((3, 0), np.float32), np.zeros((2, 0), np.float32), np.ones(2, np.float32))


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
