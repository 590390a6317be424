"""rotary: the C++ kernel against the numpy reference, and both against transformers'
own LlamaRotaryEmbedding + apply_rotary_pos_emb (default, llama3, linear and yarn
rope parameters, positions from a left-padded mask)."""
import numpy as np
import pytest
import torch

from tensorvm._C import Program, Session, call_op
from op_checks import check, check_error, check_signature

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402


def inv_freq(d, theta=10000.0):
    return (1.0 / theta ** (np.arange(0, d, 2, dtype=np.float32) / d)).astype(np.float32)


def padded_positions(lengths, t):
    """Position ids as transformers derives them from a left-padded attention mask:
    cumsum(mask) - 1, with the padded slots filled with 1."""
    mask = np.arange(t)[None, :] >= (t - np.asarray(lengths))[:, None]
    pos = np.cumsum(mask, -1) - 1
    return np.where(mask, pos, 1).astype(np.int64), mask


def test_signature_matches_reference():
    op = check_signature("rotary", "nn")
    assert op["params"][3]["default"] == 1.0


@pytest.mark.parametrize("b, h, t, d", [(1, 1, 1, 2), (2, 3, 5, 8), (3, 5, 7, 64), (1, 14, 1, 64), (2, 2, 33, 128)])
def test_rotary_random(rng, b, h, t, d):
    x = rng.standard_normal((b, h, t, d)).astype(np.float32)
    pos = rng.integers(0, 4096, (b, t)).astype(np.int64)
    # cos/sin are rounded once from double in both; the sum of two products can cancel,
    # so the tolerance is absolute, at the scale of x.
    check("rotary", x, pos, inv_freq(d), atol=1e-5)
    check("rotary", x, pos, inv_freq(d, 500000.0), scale=1.25, atol=1e-5)


def test_rotary_position_zero_is_identity_and_scale_multiplies(rng):
    x = rng.standard_normal((2, 3, 4, 16)).astype(np.float32)
    pos = np.zeros((2, 4), np.int64)
    np.testing.assert_array_equal(call_op("rotary", x, pos, inv_freq(16)), x)  # cos 0 = 1, sin 0 = 0
    np.testing.assert_array_equal(call_op("rotary", x, pos, inv_freq(16), scale=2.0), 2 * x)


def test_rotary_is_a_rotation_by_position_times_frequency(rng):
    """Pairs (x[i], x[i + D/2]) turn by angle pos * inv_freq[i]: norms are kept, and
    dot products of two rotated vectors depend only on the position difference."""
    d = 32
    x = rng.standard_normal((1, 1, 1, d)).astype(np.float32)
    y = rng.standard_normal((1, 1, 1, d)).astype(np.float32)
    f = inv_freq(d)
    rx = [call_op("rotary", x, np.array([[p]], np.int64), f) for p in (3, 10, 110)]
    ry = [call_op("rotary", y, np.array([[p]], np.int64), f) for p in (0, 7, 107)]
    for r in rx:
        np.testing.assert_allclose(np.linalg.norm(r), np.linalg.norm(x), rtol=1e-5)
    dots = [float((a * b).sum()) for a, b in zip(rx, ry)]  # offset 3 each time
    np.testing.assert_allclose(dots, dots[0], rtol=1e-4, atol=1e-4)


def test_rotary_edge_positions(rng):
    x = rng.standard_normal((3, 2, 4, 16)).astype(np.float32)
    big = np.array([[100000, 65535, 131071, 1], [0, 1, 2, 3], [-1, -5, 4096, 1 << 24]], np.int64)
    check("rotary", x, big, inv_freq(16), atol=1e-5)
    check("rotary", x[:1, :, :1], big[:1, :1], inv_freq(16), atol=1e-5)  # T = 1, B = 1


@pytest.mark.parametrize("shape", [(0, 2, 3, 4), (2, 0, 3, 4), (2, 2, 0, 4), (2, 2, 3, 0)])
def test_rotary_zero_size(rng, shape):
    b, _, t, d = shape
    x = np.zeros(shape, np.float32)
    check("rotary", x, np.zeros((b, t), np.int64), inv_freq(d) if d else np.zeros(0, np.float32))


def test_rotary_errors(rng):
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    pos = np.zeros((2, 4), np.int64)
    f = inv_freq(8)
    check_error("rotary", x[..., :7].copy(), pos, inv_freq(8)[:3], match="D must be even")
    check_error("rotary", x, pos, f[:3], match=r"inv_freq must be f32 \[D / 2\] = \[4\]")
    check_error("rotary", x, pos, f.astype(np.int64), match=r"inv_freq must be f32")
    check_error("rotary", x, pos[:, :3], f, match=r"positions must be i64 \[B, T\] = \[2, 4\]")
    check_error("rotary", x, pos[:1], f, match=r"positions must be i64 \[B, T\]")
    check_error("rotary", x, pos.astype(np.int32), f, match=r"positions must be i64")
    check_error("rotary", x, pos.astype(np.float32), f, match=r"positions must be i64")
    check_error("rotary", x.astype(np.int32), pos, f, match=r"x must be f32 \[B, H, T, D\]")
    check_error("rotary", x[0], pos, f, match=r"x must be f32 \[B, H, T, D\]")


ROPE_PARAMETERS = [
    ({"rope_theta": 10000.0}, 2048),
    ({"rope_theta": 500000.0}, 2048),
    ({"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
     131072),
    ({"rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, 4096),
    # yarn: attention_scaling != 1, which is rotary's scale
    ({"rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 1024}}, 4096),
]


@pytest.mark.parametrize("rope, max_pos", ROPE_PARAMETERS)
@pytest.mark.parametrize("heads, kv_heads, head_dim", [(5, 5, 16), (7, 1, 64), (6, 3, 34)])
def test_rotary_matches_transformers(rng, rope, max_pos, heads, kv_heads, head_dim):
    cfg = LlamaConfig(hidden_size=heads * head_dim, num_attention_heads=heads, num_key_value_heads=kv_heads,
                      head_dim=head_dim, max_position_embeddings=max_pos, **rope)
    emb = LlamaRotaryEmbedding(cfg)
    inv = emb.inv_freq.numpy().astype(np.float32)
    scale = float(emb.attention_scaling)
    lengths, t = [9, 4, 1], 9
    pos, _ = padded_positions(lengths, t)
    q = rng.standard_normal((3, heads, t, head_dim)).astype(np.float32)
    k = rng.standard_normal((3, kv_heads, t, head_dim)).astype(np.float32)
    with torch.no_grad():
        cos, sin = emb(torch.from_numpy(q), torch.from_numpy(pos))
        want_q, want_k = apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos, sin)
    got_q = call_op("rotary", q, pos, inv, scale=scale)
    got_k = call_op("rotary", k, pos, inv, scale=scale)
    np.testing.assert_allclose(got_q, want_q.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_k, want_k.numpy(), rtol=1e-5, atol=1e-5)
    # A decode step far into a long context: positions of each row's next token.
    step = (np.array(lengths, np.int64) + 50000)[:, None]
    q1 = q[:, :, :1].copy()
    with torch.no_grad():
        cos, sin = emb(torch.from_numpy(q1), torch.from_numpy(step))
        want, _ = apply_rotary_pos_emb(torch.from_numpy(q1), torch.from_numpy(q1), cos, sin)
    # The angle reaches 5e4 rad, where one ulp of the f32 angle is ~4e-3 rad: both
    # round the same f32 product, but torch's f32 cos/sin of it may differ by an ulp
    # of the result.
    np.testing.assert_allclose(call_op("rotary", q1, step, inv, scale=scale), want.numpy(), rtol=1e-5, atol=2e-5)


ROTARY_PROGRAM = """# tensorvm ir 1
def f(x: Tensor, pos: Tensor, inv: Tensor) -> Tensor:
    y = rotary(x, pos, inv, scale=0.5)
    return y
"""


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_rotary_in_a_program_on_threads(rng, threads):
    """Each (b, t) is computed alone: any thread count gives call_op's bits."""
    x = rng.standard_normal((3, 4, 37, 64)).astype(np.float32)
    pos, _ = padded_positions([37, 20, 3], 37)
    f = inv_freq(64)
    (y,) = Session(Program.from_text(ROTARY_PROGRAM), threads).run("f", [x, pos, f])
    np.testing.assert_array_equal(y, call_op("rotary", x, pos, f, scale=0.5))
