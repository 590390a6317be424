"""The decoder-only LMs' activations and norms against transformers' own modules: gelu
with approximate="tanh" as GPT-2's gelu_new (NewGELUActivation) and gelu_pytorch_tanh,
rms_norm as LlamaRMSNorm and Qwen2RMSNorm. (rotary's parity is in test_ops_rotary.py.)"""
import numpy as np
import pytest
import torch

from tensorvm._C import call_op

transformers = pytest.importorskip("transformers")
from transformers.activations import ACT2FN  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: E402
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm  # noqa: E402

TANH_ULP = 2.0 ** -24  # one ulp of tanh's result near +-1


def gelu_inputs(rng):
    xs = [rng.standard_normal(20000) * s for s in (0.5, 1, 3, 10, 1e4, 1e13)]
    edges = [0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 3e38, -3e38, np.inf, -np.inf, -5.2, -9.0, 5.2]
    return np.concatenate(xs + [np.array(edges)]).astype(np.float32)


@pytest.mark.parametrize("name", ["gelu_new", "gelu_pytorch_tanh"])
def test_gelu_tanh_matches_transformers(rng, name):
    x = gelu_inputs(rng)
    got = call_op("gelu", x, approximate="tanh")
    with torch.no_grad():
        want = ACT2FN[name](torch.from_numpy(x)).numpy()
    odd = ~np.isfinite(want)  # gelu(inf) = inf; gelu(-inf) = -inf * 0 = NaN in both
    np.testing.assert_array_equal(got[odd], want[odd])
    assert np.isnan(want[x == -np.inf]).all()
    got, want, xf = got[~odd], want[~odd], x[~odd]
    assert np.isfinite(got).all()
    # Relative 1e-6, except that both compute 0.5 * x * (1 + tanh(u)) in f32 (as GPT-2's
    # formula is written): for x below ~-2, 1 + tanh(u) cancels, and an ulp of
    # difference between libm's tanh and torch's (SLEEF's) becomes 0.5 * |x| * ulp absolute.
    tol = 1e-6 * np.abs(want) + 2 * TANH_ULP * 0.5 * np.abs(xf)
    bad = np.abs(got - want) > tol
    assert not bad.any(), (xf[bad][:5], got[bad][:5], want[bad][:5])
    # Where 1 + tanh does not cancel, the plain relative bound holds.
    live = (xf > -1) & (want != 0)
    np.testing.assert_allclose(got[live], want[live], rtol=1e-6, atol=0)


@pytest.mark.parametrize("module", [LlamaRMSNorm, Qwen2RMSNorm])
@pytest.mark.parametrize("d, scale, eps", [(64, 1.0, 1e-6), (896, 3.0, 1e-6), (2048, 1e-3, 1e-5), (17, 1e4, 1e-6),
                                           (5, 1e15, 1e-6), (40, 1e-12, 1e-5)])
def test_rms_norm_matches_transformers(rng, module, d, scale, eps):
    """transformers computes in f32: x * rsqrt(mean(x^2) + eps) * weight. rms_norm's mean
    is in double (the only difference: about an ulp of the row's scale factor)."""
    norm = module(d, eps=eps)
    w = rng.standard_normal(d).astype(np.float32)
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(w))
    x = (rng.standard_normal((3, 5, d)) * scale).astype(np.float32)
    x[0, 0] = 0  # an all-zero row: x * rsqrt(eps) = 0
    with torch.no_grad():
        want = norm(torch.from_numpy(x)).numpy()
    got = call_op("rms_norm", x, w, eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    np.testing.assert_array_equal(got[0, 0], 0)
