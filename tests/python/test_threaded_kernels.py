"""Kernels that split their work over the session's threads give the one-thread result.

Element-wise maps split the flat element range (so a chunk may start and end in the middle
of an inner run, and broadcast or strided operands must be re-based there), softmax splits
rows and attention splits (batch, head) pairs. Sizes are above the parallel threshold and
odd, so chunk boundaries land mid-row. Each result is also checked against the reference.
"""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref

# Every kernel variant this CPU runs (conftest.py), not only the one it would pick.
pytestmark = pytest.mark.usefixtures("kernel_variant")


def run(text, args, threads):
    prog = tensorvm._C.Program.from_text("# tensorvm ir 1\n" + text, "")
    return [np.asarray(v) for v in tensorvm._C.Session(prog, threads).run("f", args)]


def same_on_1_and_2_threads(text, args):
    one, two = run(text, args, 1), run(text, args, 2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    return two


BINARY = "def f(x: Tensor, y: Tensor) -> Tensor:\n    z = {op}(x, y)\n    return z\n"


@pytest.mark.parametrize("xs, ys", [
    ((3, 70001), (3, 70001)),      # one contiguous run
    ((7, 30011), (30011,)),        # inner broadcast: runs of 30011, chunks start mid-run
    ((7, 30011), (7, 1)),          # a column broadcast (stride 0 inside the run)
    ((5, 3, 9001), (5, 1, 9001)),  # a middle broadcast dim
    ((2, 300, 257), (300, 1)),
])
@pytest.mark.parametrize("op", ["add", "mul", "maximum"])
def test_binary_broadcast(rng, xs, ys, op):
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    got = same_on_1_and_2_threads(BINARY.format(op=op), [x, y])[0]
    np.testing.assert_array_equal(got, getattr(ref, op)(x, y))


def test_binary_transposed_view(rng):
    """A strided (transposed) operand: no run is contiguous."""
    x = rng.standard_normal((301, 257)).astype(np.float32)
    y = rng.standard_normal((257, 301)).astype(np.float32)
    text = "def f(x: Tensor, y: Tensor) -> Tensor:\n    t = transpose(y, 0, 1)\n    z = sub(x, t)\n    return z\n"
    got = same_on_1_and_2_threads(text, [x, y])[0]
    np.testing.assert_array_equal(got, x - y.T)


@pytest.mark.parametrize("mask_shape", [(9, 30011), (30011,), (9, 1)])
def test_masked_fill_and_where(rng, mask_shape):
    x = rng.standard_normal((9, 30011)).astype(np.float32)
    m = rng.random(mask_shape) < 0.3
    text = ("def f(x: Tensor, m: Tensor) -> tuple[Tensor, Tensor]:\n"
            "    a = masked_fill(x, m, -1.5)\n    b = where(m, x, 0.25)\n    return a, b\n")
    a, b = same_on_1_and_2_threads(text, [x, m])
    np.testing.assert_array_equal(a, ref.masked_fill(x, m, -1.5))
    np.testing.assert_array_equal(b, ref.where(m, x, 0.25))


@pytest.mark.parametrize("op", ["exp", "silu", "tanh"])
def test_unary(rng, op):
    x = (rng.standard_normal(200003) * 5).astype(np.float32)
    got = same_on_1_and_2_threads(f"def f(x: Tensor) -> Tensor:\n    y = {op}(x)\n    return y\n", [x])[0]
    np.testing.assert_allclose(got, getattr(ref, op)(x), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(33, 59514), (3, 100003), (1, 70001)])
def test_softmax_rows(rng, op, shape):
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    x[0, :5] = -np.inf
    got = same_on_1_and_2_threads(f"def f(x: Tensor) -> Tensor:\n    y = {op}(x, -1)\n    return y\n", [x])[0]
    np.testing.assert_allclose(got, getattr(ref, op)(x, -1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("B, H, Tq, Tk", [(32, 8, 1, 37), (3, 8, 45, 45), (1, 3, 130, 7), (5, 1, 1, 1)])
def test_attention_heads(rng, B, H, Tq, Tk):
    q = rng.standard_normal((B, H, Tq, 64)).astype(np.float32)
    k = rng.standard_normal((B, H, Tk, 64)).astype(np.float32)
    v = rng.standard_normal((B, H, Tk, 64)).astype(np.float32)
    mask = rng.random((B, 1, 1, Tk)) < 0.8
    mask[..., 0] = True
    text = ("def f(q: Tensor, k: Tensor, v: Tensor, m: Tensor) -> Tensor:\n"
            "    o = attention(q, k, v, m)\n    return o\n")
    got = same_on_1_and_2_threads(text, [q, k, v, mask])[0]
    np.testing.assert_allclose(got, ref.attention(q, k, v, mask), rtol=1e-4, atol=1e-5)
