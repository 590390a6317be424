"""Fused attention: C++ kernel against the numpy reference (masks, all-masked rows,
strided K/V views from a KV cache, errors)."""
import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import Program, Session, call_op, registry
from op_checks import check, check_error, check_signature

# The products are the kernel variants' (ops/kernels/): every test runs on each of them.
pytestmark = pytest.mark.usefixtures("kernel_variant")


def qkv(rng, b, h, tq, tk, d, dv=None):
    dv = d if dv is None else dv
    return (rng.standard_normal((b, h, tq, d)).astype(np.float32),
            rng.standard_normal((b, h, tk, d)).astype(np.float32),
            rng.standard_normal((b, h, tk, dv)).astype(np.float32))


def naive(q, k, v, scale, additive=None):
    """Textbook softmax attention in float64 (no all-masked rows here)."""
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if additive is not None:
        s = s + additive
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v.astype(np.float64))


def test_signature_matches_reference():
    op = check_signature("attention", "attention")
    assert [p["default"] for p in op["params"][3:]] == [None, None]


@pytest.mark.parametrize("b, h, tq, tk, d, dv", [
    (2, 8, 1, 37, 64, 64),    # decode step
    (1, 8, 128, 128, 64, 64),  # prefill / encoder
    (3, 2, 5, 7, 16, 8),       # Dv != D
    (1, 1, 1, 1, 1, 1),
    (2, 3, 4, 300, 32, 32),   # long cache
])
def test_attention_random(rng, b, h, tq, tk, d, dv):
    q, k, v = qkv(rng, b, h, tq, tk, d, dv)
    got = check("attention", q, k, v)
    np.testing.assert_allclose(got, naive(q, k, v, 1 / np.sqrt(d)), rtol=1e-4, atol=1e-5)
    check("attention", q, k, v, scale=0.125)
    # An int scale; with scale 1 the scores reach ~30, so f32 rounding of a score (~4e-6)
    # moves the probabilities by that much relative: compare at that precision.
    check("attention", q, k, v, scale=1, rtol=1e-4, atol=5e-5)


def test_attention_default_scale_is_inverse_sqrt_d(rng):
    q, k, v = qkv(rng, 1, 2, 3, 4, 16)
    np.testing.assert_allclose(call_op("attention", q, k, v), call_op("attention", q, k, v, scale=0.25), rtol=1e-6)
    assert not np.allclose(call_op("attention", q, k, v), call_op("attention", q, k, v, scale=1.0))


def test_attention_bool_padding_mask(rng):
    q, k, v = qkv(rng, 3, 4, 2, 6, 8)
    lengths = np.array([6, 3, 1])
    mask = (np.arange(6)[None, :] < lengths[:, None])[:, None, None, :]  # [B, 1, 1, Tk]
    got = check("attention", q, k, v, mask)
    # Equivalent to attending only to the unpadded prefix.
    for i, n in enumerate(lengths):
        np.testing.assert_allclose(got[i], call_op("attention", q[i:i + 1], k[i:i + 1, :, :n], v[i:i + 1, :, :n])[0],
                                   rtol=1e-5, atol=1e-6)


def test_attention_causal_masks(rng):
    q, k, v = qkv(rng, 2, 2, 5, 5, 8)
    causal = np.tril(np.ones((5, 5), bool))
    additive = np.where(causal, 0.0, -np.inf).astype(np.float32)
    got = check("attention", q, k, v, causal[None, None])
    np.testing.assert_allclose(call_op("attention", q, k, v, additive[None, None]), got, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got, naive(q, k, v, 1 / np.sqrt(8), np.where(causal, 0, -1e300)), rtol=1e-4, atol=1e-5)
    check("attention", q, k, v, additive)          # rank-2 mask [Tq, Tk]
    check("attention", q, k, v, causal[None])      # rank-3 mask [1, Tq, Tk]
    check("attention", q, k, v, np.float32(-1e30) * ~causal)  # large finite additive mask


@pytest.mark.parametrize("mshape", [(2, 1, 3, 4), (1, 3, 1, 1), (4,), (1, 1, 3, 1), (2, 3, 3, 4), ()])
def test_attention_mask_broadcasting(rng, mshape):
    q, k, v = qkv(rng, 2, 3, 3, 4, 8)
    fm = np.asarray(rng.standard_normal(mshape) * 3, np.float32)
    check("attention", q, k, v, fm)
    check("attention", q, k, v, np.asarray(rng.random(mshape) < 0.7))


def test_attention_all_masked_rows_give_zeros(rng):
    q, k, v = qkv(rng, 2, 2, 3, 4, 8)
    mask = np.ones((2, 1, 3, 4), bool)
    mask[0, :, 1] = False  # batch 0, query 1: nothing to attend to
    got = check("attention", q, k, v, mask)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got[0, :, 1], 0)
    assert (got[0, :, 0] != 0).any() and (got[1] != 0).any()
    additive = np.where(mask, 0, -np.inf).astype(np.float32)
    got2 = check("attention", q, k, v, additive)
    np.testing.assert_array_equal(got2[0, :, 1], 0)
    # finfo.min masks (as Hugging Face builds them) stay finite: a uniform average, like torch.
    fmin = np.where(mask, 0, np.finfo(np.float32).min).astype(np.float32)
    got3 = check("attention", q, k, v, fmin)
    np.testing.assert_allclose(got3[0, :, 1], v[0].mean(1), rtol=1e-5, atol=1e-6)


def test_attention_inf_scores(rng):
    q, k, v = qkv(rng, 1, 1, 2, 3, 4)
    mask = np.array([[0, -np.inf, -np.inf], [0, 0, -np.inf]], np.float32)
    got = check("attention", q, k, v, mask)
    np.testing.assert_allclose(got[0, 0, 0], v[0, 0, 0], rtol=1e-6)  # one key left: its value


@pytest.mark.parametrize("b, h, tq, tk, d, dv", [
    (0, 8, 1, 5, 4, 4), (2, 0, 1, 5, 4, 4), (2, 2, 0, 5, 4, 4), (2, 2, 3, 0, 4, 4), (2, 2, 3, 5, 0, 4),
    (2, 2, 3, 5, 4, 0),
])
def test_attention_zero_size(rng, b, h, tq, tk, d, dv):
    q, k, v = qkv(rng, b, h, tq, tk, d, dv)
    got = check("attention", q, k, v)
    if tk == 0:
        assert (got == 0).all()
    check("attention", q, k, v, np.ones((1, 1, tq, tk), bool))


def test_attention_errors(rng):
    q, k, v = qkv(rng, 2, 2, 3, 4, 8)
    check_error("attention", q.astype(np.int64), k, v, match="must be f32")
    check_error("attention", q[0], k, v, match=r"q must be 4-D")
    check_error("attention", q, k[:, :, :, :4], v, match=r"k must be \[B, Hkv, Tk, D\] = \[2, Hkv, Tk, 8\]")
    check_error("attention", q, k[:1], v, match=r"k must be")
    check_error("attention", q, k, v[:, :, :3], match=r"v must be \[B, Hkv, Tk, Dv\] = \[2, 2, 4, Dv\]")
    check_error("attention", q, k, v[:, :1], match=r"v must be \[B, Hkv, Tk, Dv\] = \[2, 2, 4, Dv\]")
    check_error("attention", q, k, v, np.zeros((2, 2, 3, 5), np.float32), match=r"mask must broadcast to \[B, H, Tq, Tk\]")
    check_error("attention", q, k, v, np.zeros((3, 1, 1, 4), bool), match=r"mask must broadcast")
    check_error("attention", q, k, v, np.zeros((1, 1, 1, 3, 4), bool), match=r"mask must broadcast")
    check_error("attention", q, k, v, np.zeros((3, 4), np.int64), match=r"mask must be f32 \(additive\) or bool")
    check_error("attention", q, k, v, None, "x", match=r"scale")


KV_PROGRAM = """# tensorvm ir 1
def step(q: Tensor, k: Tensor, v: Tensor, q2: Tensor, k2: Tensor, v2: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    cache = kv_cache(1, 3, 2, 8, 16)
    ka, va = kv_append(cache, 0, k, v)
    o1 = attention(q, ka, va)
    kb, vb = kv_append(cache, 0, k2, v2)
    o2 = attention(q2, kb, vb, mask, scale=0.5)
    return o1, o2, kb, vb
"""


def test_attention_reads_strided_kv_cache_views(rng):
    """kv_append hands out [B, H, len, D] views of [B, H, max_len, D] storage: dims 0
    and 1 have strides of the full buffer. The kernel reads them in place."""
    names = {o["name"] for o in registry()}
    if not {"kv_cache", "kv_append"} <= names:
        pytest.skip("kv cache ops not available")
    q, k, v = qkv(rng, 3, 2, 4, 4, 8)        # prefill of 4 positions
    q2, k2, v2 = qkv(rng, 3, 2, 1, 1, 8)     # one decode step
    mask = np.array([True, True, False, True, True])[None, None, None, :] & np.ones((3, 1, 1, 1), bool)
    o1, o2, kb, vb = Session(Program.from_text(KV_PROGRAM)).run("step", [q, k, v, q2, k2, v2, mask])
    k_all, v_all = np.concatenate([k, k2], 2), np.concatenate([v, v2], 2)
    np.testing.assert_array_equal(kb, k_all)
    np.testing.assert_allclose(o1, ref.attention(q, k, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o2, ref.attention(q2, k_all, v_all, mask, scale=0.5), rtol=1e-5, atol=1e-6)


TRANSPOSED_PROGRAM = """# tensorvm ir 1
def f(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    kt = transpose(k, 1, 2)
    vt = transpose(v, 1, 2)
    o = attention(q, kt, vt)
    return o
"""


def test_attention_reads_keys_whose_rows_are_not_contiguous(rng):
    """k and v as [B, T, H, D] transposed to [B, H, T, D]: one head's rows are H * D
    apart, which takes the kernel's path for strided keys."""
    q = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    k = rng.standard_normal((2, 7, 3, 8)).astype(np.float32)
    v = rng.standard_normal((2, 7, 3, 8)).astype(np.float32)
    (o,) = Session(Program.from_text(TRANSPOSED_PROGRAM)).run("f", [q, k, v])
    want = naive(q, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3), 1 / np.sqrt(8))
    np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- grouped-query attention

def gqa(rng, b, h, hkv, tq, tk, d, dv=None):
    dv = d if dv is None else dv
    return (rng.standard_normal((b, h, tq, d)).astype(np.float32),
            rng.standard_normal((b, hkv, tk, d)).astype(np.float32),
            rng.standard_normal((b, hkv, tk, dv)).astype(np.float32))


def torch_sdpa(q, k, v, mask=None, scale=None):
    """torch's scaled_dot_product_attention after transformers' repeat_kv (repeat_interleave)."""
    torch = pytest.importorskip("torch")
    g = q.shape[1] // k.shape[1]
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    m = None if mask is None else torch.from_numpy(mask)
    with torch.no_grad():
        o = torch.nn.functional.scaled_dot_product_attention(
            tq, tk.repeat_interleave(g, 1), tv.repeat_interleave(g, 1), attn_mask=m, scale=scale)
    return o.numpy()


def causal_left_padded(lengths, tq, tk):
    """[B, 1, Tq, Tk] bool: the last tq queries of tk positions, causal, with each row's
    first tk - length keys padding (a left-padded batch, as decoder-only LMs are fed)."""
    lengths = np.asarray(lengths)
    keys = np.arange(tk)
    queries = np.arange(tk - tq, tk)
    causal = keys[None, :] <= queries[:, None]                    # [Tq, Tk]
    real = keys[None, :] >= (tk - lengths)[:, None]               # [B, Tk]
    return (causal[None] & real[:, None, :])[:, None]


@pytest.mark.parametrize("h, hkv", [(4, 4), (6, 3), (8, 2), (7, 1), (14, 2)])
@pytest.mark.parametrize("tq, tk", [(9, 9), (1, 12), (5, 5)])
def test_gqa_matches_torch_after_repeat_kv(rng, h, hkv, tq, tk):
    q, k, v = gqa(rng, 3, h, hkv, tq, tk, 16)
    got = check("attention", q, k, v)
    np.testing.assert_allclose(got, torch_sdpa(q, k, v), rtol=1e-5, atol=2e-6)
    # causal + left padding; rows of padded queries see nothing (zeros, here and in the reference)
    mask = causal_left_padded([tk, max(1, tk - 3), 1], tq, tk)
    got = check("attention", q, k, v, mask)
    live = mask.any(-1)[:, 0]                                     # [B, Tq]: some key to attend to
    want = torch_sdpa(q, k, v, mask)
    np.testing.assert_allclose(got.transpose(0, 2, 1, 3)[live], want.transpose(0, 2, 1, 3)[live], rtol=1e-5, atol=2e-6)
    np.testing.assert_array_equal(got.transpose(0, 2, 1, 3)[~live], 0)
    assert (~live).any() == (tq > 1)
    # an additive mask with a per-head bias and a scale
    fm = np.where(mask, rng.standard_normal((3, h, tq, tk)), -np.inf).astype(np.float32)
    got = check("attention", q, k, v, fm, scale=0.3)
    np.testing.assert_allclose(got.transpose(0, 2, 1, 3)[live], torch_sdpa(q, k, v, fm, 0.3).transpose(0, 2, 1, 3)[live],
                               rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("h, hkv", [(8, 2), (7, 1), (12, 4), (14, 2)])
def test_gqa_equals_attention_on_repeated_kv(rng, h, hkv):
    """Each query row's arithmetic is the same whichever block of heads it is computed
    in: GQA gives the bits of plain attention on K/V repeated per query head."""
    for tq, tk, d, dv in [(1, 40, 64, 64), (5, 5, 16, 8), (20, 33, 8, 24), (40, 70, 40, 24)]:  # the last: blocked
        q, k, v = gqa(rng, 2, h, hkv, tq, tk, d, dv)
        g = h // hkv
        np.testing.assert_array_equal(call_op("attention", q, k, v),
                                      call_op("attention", q, np.repeat(k, g, 1), np.repeat(v, g, 1)))


def test_gqa_errors(rng):
    q, k, v = gqa(rng, 2, 6, 4, 3, 5, 8)
    check_error("attention", q, k, v, match=r"k has 4 heads, which do not divide q's 6", ref_match=r"k has 4 heads")
    q, k, v = gqa(rng, 2, 6, 3, 3, 5, 8)
    check_error("attention", q, k, v[:, :2], match=r"v must be \[B, Hkv, Tk, Dv\] = \[2, 3, 5, Dv\]")
    check_error("attention", q, k[:, :0], v[:, :0], match=r"k has 0 heads")
    check_error("attention", q, k, v, np.ones((2, 3, 3, 5), bool), match=r"mask must broadcast to \[B, H, Tq, Tk\] = \[2, 6, 3, 5\]")


GQA_KV_PROGRAM = """# tensorvm ir 1
def step(q: Tensor, k: Tensor, v: Tensor, m: Tensor, q2: Tensor, k2: Tensor, v2: Tensor, m2: Tensor, index: Tensor, q3: Tensor, k3: Tensor, v3: Tensor, m3: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    cache = kv_cache(2, 3, HKV, 16, 24)
    ka, va = kv_append(cache, 1, k, v)
    o1 = attention(q, ka, va, m)
    kb, vb = kv_append(cache, 1, k2, v2)
    o2 = attention(q2, kb, vb, m2)
    c2 = kv_reorder(cache, index)
    kc, vc = kv_append(c2, 1, k3, v3)
    o3 = attention(q3, kc, vc, m3)
    return o1, o2, o3, kc, vc
"""


@pytest.mark.parametrize("h, hkv", [(4, 4), (6, 3), (8, 2), (5, 1)])
def test_gqa_reads_a_kv_cache_with_fewer_heads(rng, h, hkv):
    """A cache of Hkv heads: left-padded prefill, a decode step, a beam reorder and another
    step, each attention reading the cache's strided [B, Hkv, len, D] views in place."""
    lengths, t = [6, 2, 4], 6
    q, k, v = gqa(rng, 3, h, hkv, t, t, 16)
    m = causal_left_padded(lengths, t, t)
    q2, k2, v2 = gqa(rng, 3, h, hkv, 1, 1, 16)
    m2 = causal_left_padded(lengths, 1, t + 1)  # the new token sees its row's real positions and itself
    index = np.array([2, 2, 0], np.int64)
    q3, k3, v3 = gqa(rng, 3, h, hkv, 1, 1, 16)
    m3 = m2[index]
    m3 = np.concatenate([m3, np.ones((3, 1, 1, 1), bool)], -1)
    prog = Program.from_text(GQA_KV_PROGRAM.replace("HKV", str(hkv)))
    o1, o2, o3, kc, vc = Session(prog).run("step", [q, k, v, m, q2, k2, v2, m2, index, q3, k3, v3, m3])
    k_all, v_all = np.concatenate([k, k2], 2), np.concatenate([v, v2], 2)
    k_re, v_re = np.concatenate([k_all[index], k3], 2), np.concatenate([v_all[index], v3], 2)
    np.testing.assert_array_equal(kc, k_re)
    np.testing.assert_array_equal(vc, v_re)
    np.testing.assert_allclose(o1, ref.attention(q, k, v, m), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o2, ref.attention(q2, k_all, v_all, m2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o3, ref.attention(q3, k_re, v_re, m3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o3, torch_sdpa(q3, k_re, v_re, m3), rtol=1e-5, atol=2e-6)
    # the padded query rows of the prefill attend to nothing
    np.testing.assert_array_equal(o1[1, :, :4], 0)


@pytest.mark.parametrize("tq, tk", [(5, 7), (40, 77)])  # the streamed path, the blocked one (32+ query rows)
def test_gqa_reads_keys_whose_rows_are_not_contiguous(rng, tq, tk):
    q = rng.standard_normal((2, 6, tq, 8)).astype(np.float32)
    k = rng.standard_normal((2, tk, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, tk, 2, 8)).astype(np.float32)
    (o,) = Session(Program.from_text(TRANSPOSED_PROGRAM)).run("f", [q, k, v])
    kt, vt = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
    want = naive(q, np.repeat(kt, 3, 1), np.repeat(vt, 3, 1), 1 / np.sqrt(8))
    np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("tq, tk, d", [(5, 30, 32), (130, 130, 40)])  # the streamed path, the blocked one
def test_gqa_thread_count_does_not_change_the_bits(rng, threads, tq, tk, d):
    text = ("# tensorvm ir 1\ndef f(q: Tensor, k: Tensor, v: Tensor, m: Tensor) -> Tensor:\n"
            "    o = attention(q, k, v, m)\n    return o\n")
    q, k, v = gqa(rng, 3, 14, 2, tq, tk, d)
    m = causal_left_padded([tq, tq - 2, 1], tq, tk)
    one = Session(Program.from_text(text), 1).run("f", [q, k, v, m])[0]
    many = Session(Program.from_text(text), threads).run("f", [q, k, v, m])[0]
    np.testing.assert_array_equal(one, many)


# ---------------------------------------------------------------- many query rows
# From 32 query rows on, attention takes its blocked path (ops/kernels/attention.h):
# Whisper's 1500-position self-attention, odd sizes that cut GEMM tiles and blocks of
# rows anywhere, head sizes 40 / 64 / 80, masks, GQA. (Strided keys and thread counts:
# the GQA tests above, parametrised over both paths.)

@pytest.mark.parametrize("b, h, hkv, tq, tk, d, dv", [
    (1, 2, 2, 1500, 1500, 64, 64),   # whisper's encoder self-attention (2 of its heads)
    (2, 4, 2, 97, 1499, 40, 40),
    (1, 3, 1, 64, 33, 80, 80),
    (2, 2, 2, 33, 5, 16, 8),
    (1, 2, 2, 32, 1, 8, 8),
])
def test_attention_many_query_rows(rng, b, h, hkv, tq, tk, d, dv):
    q, k, v = gqa(rng, b, h, hkv, tq, tk, d, dv)
    # atol: an output sums up to 1500 products, each rounded in float32 here and in the reference
    tol = dict(rtol=1e-5, atol=5e-6)
    got = check("attention", q, k, v, **tol)
    np.testing.assert_allclose(got, torch_sdpa(q, k, v), **tol)
    # causal with left padding: batch row 0's first queries see nothing (zeros)
    mask = causal_left_padded([max(1, tk - tq - 3)] + [tk] * (b - 1), tq, tk)
    got = check("attention", q, k, v, mask, **tol)
    live = mask.any(-1)[:, 0]
    want = torch_sdpa(q, k, v, mask)
    np.testing.assert_allclose(got.transpose(0, 2, 1, 3)[live], want.transpose(0, 2, 1, 3)[live], **tol)
    np.testing.assert_array_equal(got.transpose(0, 2, 1, 3)[~live], 0)
    # additive masks: per head, and one value per query broadcast over the keys
    check("attention", q, k, v, rng.standard_normal((b, h, tq, tk)).astype(np.float32), scale=0.3, **tol)
    check("attention", q, k, v, rng.standard_normal((b, 1, tq, 1)).astype(np.float32), **tol)
