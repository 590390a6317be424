"""nn ops (layer_norm, rms_norm, embedding): C++ kernels against the numpy reference."""
import numpy as np
import pytest

from tensorvm._C import call_op
from op_checks import check, check_error, check_exact, check_signature
from pyc_helpers import f32


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "embedding"])
def test_signature_matches_reference(name):
    check_signature(name, "nn")


# ---------------------------------------------------------------- layer_norm

@pytest.mark.parametrize("shape", [(5,), (3, 8), (2, 3, 16), (2, 2, 3, 512), (1, 1)])
def test_layer_norm_random(rng, shape):
    x = f32(rng, *shape, scale=3.0) + 2.0
    d = shape[-1]
    w, b = f32(rng, d), f32(rng, d)
    check("layer_norm", x)
    check("layer_norm", x, w, b)
    check("layer_norm", x, w)
    check("layer_norm", x, None, b)
    check("layer_norm", x, w, b, eps=1e-3)
    check("layer_norm", x, bias=b, eps=0.5)


def test_layer_norm_matches_torch_formula(rng):
    # Biased variance, eps inside the sqrt: a hand-computed row.
    x = np.array([[1.0, 2.0, 3.0, 6.0]], np.float32)
    mean, var = 3.0, (4 + 1 + 0 + 9) / 4
    want = (x - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(call_op("layer_norm", x), want, rtol=1e-6)


def test_layer_norm_constant_rows_and_large_values(rng):
    x = np.full((3, 7), 4.0, np.float32)
    b = f32(rng, 7)
    got = check("layer_norm", x, None, b)
    np.testing.assert_allclose(got, np.broadcast_to(b, (3, 7)), rtol=0, atol=1e-6)
    big = f32(rng, 4, 32, scale=1e30)
    got = check("layer_norm", big)
    assert np.isfinite(got).all()
    check("layer_norm", big - 1e30)
    check("layer_norm", f32(rng, 2, 64, scale=1e-20))


def test_layer_norm_zero_size(rng):
    check("layer_norm", np.zeros((0, 8), np.float32), f32(rng, 8), f32(rng, 8))
    check("layer_norm", np.zeros((3, 0), np.float32), np.zeros(0, np.float32))
    check("layer_norm", np.zeros((2, 0, 4), np.float32))


def test_layer_norm_errors(rng):
    x = f32(rng, 3, 4)
    check_error("layer_norm", np.ones((), np.float32), match="at least 1 dimension")
    check_error("layer_norm", x.astype(np.int64), match="x must be f32")
    check_error("layer_norm", x, f32(rng, 5), match=r"weight must be f32\[4\]")
    check_error("layer_norm", x, None, f32(rng, 4).astype(np.int32), match=r"bias must be f32\[4\]")
    check_error("layer_norm", x, f32(rng, 1, 4), match="weight")
    check_error("layer_norm", x, eps=-1.0, match="eps")


# ---------------------------------------------------------------- rms_norm

@pytest.mark.parametrize("shape", [(5,), (3, 8), (2, 3, 16), (2, 2, 3, 512)])
def test_rms_norm_random(rng, shape):
    x = f32(rng, *shape, scale=2.0)
    w = f32(rng, shape[-1])
    check("rms_norm", x)
    check("rms_norm", x, w)
    check("rms_norm", x, w, eps=1e-2)


def test_rms_norm_formula_and_edges(rng):
    x = np.array([[3.0, 4.0]], np.float32)
    np.testing.assert_allclose(call_op("rms_norm", x, eps=0.0), x / np.sqrt(12.5), rtol=1e-6)
    check("rms_norm", np.zeros((2, 3), np.float32))  # 0 / sqrt(eps) = 0
    check("rms_norm", f32(rng, 3, 16, scale=1e30))
    check("rms_norm", np.zeros((0, 3), np.float32))
    check("rms_norm", np.zeros((4, 0), np.float32))


def test_rms_norm_errors(rng):
    check_error("rms_norm", np.ones((), np.float32), match="at least 1 dimension")
    check_error("rms_norm", np.ones((2, 3), np.int32), match="x must be f32")
    check_error("rms_norm", f32(rng, 2, 3), f32(rng, 2), match=r"weight must be f32\[3\]")


# ---------------------------------------------------------------- embedding

@pytest.mark.parametrize("ids_shape", [(), (5,), (2, 3), (2, 1, 4), (2, 0)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_embedding_random(rng, ids_shape, dtype):
    w = f32(rng, 11, 6)
    ids = rng.integers(0, 11, size=ids_shape).astype(dtype)
    got = check_exact("embedding", ids, w)
    assert got.shape == ids_shape + (6,)


def test_embedding_edge_rows_and_values(rng):
    w = f32(rng, 4, 3, scale=1e30)
    w[2] = [np.inf, -np.inf, 0.0]
    check_exact("embedding", np.array([0, 3, 2, 3], np.int64), w)
    check_exact("embedding", np.array([1, 2], np.int64), np.zeros((4, 0), np.float32))


def test_embedding_errors(rng):
    w = f32(rng, 10, 4)
    check_error("embedding", np.array([1, 10], np.int64), w, match=r"id 10 out of range \[0, 10\)")
    check_error("embedding", np.array([[3, -1]], np.int32), w, match=r"id -1 out of range \[0, 10\)")
    check_error("embedding", np.array([1.0], np.float32), w, match="ids must be i64 or i32")
    check_error("embedding", np.array([1], np.int64), f32(rng, 10), match=r"weight must be f32 \[V, D\]")
    check_error("embedding", np.array([1], np.int64), w.astype(np.int64), match="weight must be f32")
    check_error("embedding", np.array([0], np.int64), np.zeros((0, 4), np.float32), match=r"id 0 out of range \[0, 0\)")


@pytest.mark.usefixtures("kernel_variant")  # the rows are widened by each variant's kernel
@pytest.mark.parametrize("half", ["f16", "bf16"])
@pytest.mark.parametrize("d", [1, 7, 16, 37])
def test_embedding_16bit_table(rng, half, d):
    """An f16 / bf16 table gives its rows widened to f32, exactly (NaN, inf, subnormals too)."""
    import ml_dtypes

    w = f32(rng, 13, d).astype(np.float16 if half == "f16" else ml_dtypes.bfloat16)
    w.reshape(-1)[:3] = np.array([np.nan, -np.inf, 1e-7 if half == "f16" else 1e-40], np.float32).astype(w.dtype)
    ids = np.array([[0, 12, 5], [5, 0, 1]], np.int64)
    got = check_exact("embedding", ids, w)
    assert got.dtype == np.float32 and got.shape == (2, 3, d)
    np.testing.assert_array_equal(got, w.astype(np.float32)[ids])
    check_exact("embedding", ids.astype(np.int32), w)
    check_error("embedding", np.array([13], np.int64), w, match=r"id 13 out of range \[0, 13\)")
    check_error("embedding", ids, w.reshape(-1), match=r"weight must be f32 \[V, D\]")


def test_embedding_of_per_row_position_ids(rng):
    """GPT-2's learned positions for a left-padded batch: ids i64 [B, T] from the mask
    (cumsum - 1, padding filled with 1, as transformers derives them) pick rows of wpe."""
    wpe = f32(rng, 1024, 24)
    mask = np.arange(6)[None, :] >= (6 - np.array([6, 3, 1]))[:, None]
    pos = np.where(mask, np.cumsum(mask, -1) - 1, 1).astype(np.int64)
    got = check_exact("embedding", pos, wpe)
    assert got.shape == (3, 6, 24)
    np.testing.assert_array_equal(got[1, 3:], wpe[:3])
    np.testing.assert_array_equal(got[1, :3], np.broadcast_to(wpe[1], (3, 24)))
    np.testing.assert_array_equal(got[2, 5], wpe[0])
    check_exact("embedding", pos[:, -1:] + 1023 - pos.max(), wpe)  # a decode step at the last position
    check_error("embedding", pos + 1019, wpe, match=r"id 1024 out of range \[0, 1024\)")
