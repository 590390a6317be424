"""conv1d: the C++ kernel against torch.nn.functional.conv1d and the numpy reference."""
import numpy as np
import pytest
import torch

from tensorvm._C import call_op
from op_checks import check, check_error, check_signature
from pyc_helpers import f32


def torch_conv1d(x, w, b, stride, padding):
    with torch.no_grad():
        return torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w),
                                          None if b is None else torch.from_numpy(b),
                                          stride=stride, padding=padding).numpy()


def test_signature_matches_reference():
    check_signature("conv1d", "nn")


# Whisper's two (kernel 3, padding 1, strides 1 and 2), odd sizes, lengths that do not
# divide by the stride, kernel 1, no padding, more rows than the dot kernels take.
@pytest.mark.parametrize("batch,cin,length,cout,k,stride,padding", [
    (2, 7, 13, 5, 3, 1, 1), (2, 5, 13, 6, 3, 2, 1), (1, 80, 128, 48, 3, 1, 1), (3, 48, 128, 48, 3, 2, 1),
    (1, 3, 9, 4, 1, 1, 0), (1, 4, 10, 3, 4, 3, 0), (2, 2, 5, 3, 5, 1, 2), (1, 1, 1, 1, 3, 1, 1),
    (1, 6, 3, 2, 3, 2, 0),
])
def test_conv1d_matches_torch(rng, batch, cin, length, cout, k, stride, padding):
    x, w, b = f32(rng, batch, cin, length), f32(rng, cout, cin, k), f32(rng, cout)
    for bias in (b, None):
        got = check("conv1d", x, w, bias, stride, padding, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, torch_conv1d(x, w, bias, stride, padding), rtol=1e-4, atol=1e-4)


def test_conv1d_keywords_and_defaults(rng):
    x, w = f32(rng, 1, 3, 8), f32(rng, 2, 3, 3)
    np.testing.assert_allclose(call_op("conv1d", x, w), torch_conv1d(x, w, None, 1, 0), rtol=1e-4, atol=1e-5)
    got = call_op("conv1d", x, w, stride=2, padding=1)
    np.testing.assert_allclose(got, torch_conv1d(x, w, None, 2, 1), rtol=1e-4, atol=1e-5)


def test_conv1d_empty_batch(rng):
    got = check("conv1d", np.zeros((0, 3, 8), np.float32), f32(rng, 2, 3, 3), None, 1, 1)
    assert got.shape == (0, 2, 8)


def test_conv1d_bad_inputs(rng):
    x, w = f32(rng, 1, 3, 8), f32(rng, 2, 3, 3)
    check_error("conv1d", f32(rng, 3, 8), w, match="x must be f32 \\[batch, channels, length\\]")
    check_error("conv1d", x.astype(np.float64).astype(np.int64), w, match="x must be f32")
    check_error("conv1d", x, f32(rng, 2, 3), match="weight must be f32")
    check_error("conv1d", x, f32(rng, 2, 4, 3), match="x has 3 channels but weight is")
    check_error("conv1d", x, w, f32(rng, 3), match="bias must be f32\\[2\\]")
    check_error("conv1d", x, w, None, 0, match="stride must be at least 1")
    check_error("conv1d", x, w, None, 1, -1, match="padding must be at least 0")
    check_error("conv1d", f32(rng, 1, 3, 1), w, match="shorter than the kernel size 3")
    check_error("conv1d", x, f32(rng, 2, 3, 0), match="kernel size must be at least 1")
