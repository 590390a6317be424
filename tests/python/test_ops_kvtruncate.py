"""kv_truncate: the C++ cache against the numpy reference, the speculative-decoding
identity (truncate then append == never having appended the dropped positions), beam
caches after a reorder, views held across a truncate, and the errors."""
import numpy as np
import pytest

import tensorvm
from tensorvm._C import Program, Session
from tensorvm import reference as ref
from tensorvm._C import call_op


def kv(rng, batch, heads, t, head_dim):
    return (rng.standard_normal((batch, heads, t, head_dim)).astype(np.float32),
            rng.standard_normal((batch, heads, t, head_dim)).astype(np.float32))


def filled(cache, layer, batch, heads, head_dim, reference=False):
    """Every filled position of a layer, copied (an empty append returns the views)."""
    empty = np.zeros((batch, heads, 0, head_dim), np.float32)
    got = (ref.kv_append if reference else lambda *a: call_op("kv_append", *a))(cache, layer, empty, empty)
    return [np.array(g, copy=True) for g in got]


@pytest.mark.parametrize("layers, batch, heads, head_dim", [(1, 1, 1, 1), (3, 4, 2, 5), (2, 5, 3, 8)])
def test_truncate_matches_reference_on_random_caches(rng, layers, batch, heads, head_dim):
    """Prefill, steps, proposals, truncations (to 0, to the same length, to anything) and
    beam reorders in a random order; after each, every layer equals the reference."""
    max_len = 20
    c, r = call_op("kv_cache", layers, batch, heads, head_dim, max_len), ref.kv_cache(layers, batch, heads, head_dim, max_len)
    length = 0
    for step in range(25):
        action = rng.integers(0, 3) if step else 0
        if action == 0 and length < max_len:
            k, v = kv(rng, batch, heads, int(rng.integers(0, min(4, max_len - length) + 1)), head_dim)
            for layer in range(layers):
                for g, w in zip(call_op("kv_append", c, layer, k, v), ref.kv_append(r, layer, k, v)):
                    np.testing.assert_array_equal(g, w)
            length += k.shape[2]
        elif action == 1:
            keep = int(rng.choice([0, length, rng.integers(0, length + 1)]))
            assert repr(call_op("kv_truncate", c, keep)) == repr(c)  # the same cache, returned
            assert ref.kv_truncate(r, keep) is r
            length = keep
        else:
            idx = rng.integers(0, batch, size=batch)
            call_op("kv_reorder", c, idx)
            ref.kv_reorder(r, idx)
        for layer in range(layers):
            assert call_op("kv_length", c, layer) == ref.kv_length(r, layer) == length
            for g, w in zip(filled(c, layer, batch, heads, head_dim), filled(r, layer, batch, heads, head_dim, True)):
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("reorder", [False, True])
@pytest.mark.parametrize("accepted", [0, 2, 4])
def test_truncate_then_append_equals_never_appending_the_dropped(rng, reorder, accepted):
    """The verify step of speculative decoding: k = 4 proposals appended, `accepted` of them
    kept plus the target's own token. With beams, the reorder comes before the proposals
    (beams chosen) and after the truncate (next beam step)."""
    layers, batch, heads, head_dim, max_len = 3, 4, 2, 6, 16
    prefix, proposals, bonus = kv(rng, batch, heads, 5, head_dim), kv(rng, batch, heads, 4, head_dim), kv(rng, batch, heads, 1, head_dim)
    idx1, idx2 = np.array([2, 2, 0, 1]), np.array([3, 0, 0, 2])
    spec, plain = (call_op("kv_cache", layers, batch, heads, head_dim, max_len) for _ in range(2))
    for layer in range(layers):
        call_op("kv_append", spec, layer, *prefix)
        call_op("kv_append", plain, layer, *prefix)
    if reorder:
        call_op("kv_reorder", spec, idx1)
        call_op("kv_reorder", plain, idx1)
    for layer in range(layers):
        call_op("kv_append", spec, layer, *proposals)
        call_op("kv_append", plain, layer, *(t[:, :, :accepted] for t in proposals))
    call_op("kv_truncate", spec, 5 + accepted)
    if reorder:
        call_op("kv_reorder", spec, idx2)
        call_op("kv_reorder", plain, idx2)
    for layer in range(layers):
        got = call_op("kv_append", spec, layer, *bonus)
        want = call_op("kv_append", plain, layer, *bonus)
        assert got[0].shape == (batch, heads, 5 + accepted + 1, head_dim)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_length_zero_same_length_and_cross_untouched(rng):
    c = call_op("kv_cache", 2, 2, 3, 4, 8)
    k, v = kv(rng, 2, 3, 5, 4)
    for layer in range(2):
        call_op("kv_append", c, layer, k, v)
    ck, cv = kv(rng, 2, 3, 7, 4)
    call_op("kv_set_cross", c, 1, ck, cv)
    call_op("kv_truncate", c, 5)  # a no-op
    assert call_op("kv_length", c, 1) == 5
    np.testing.assert_array_equal(filled(c, 1, 2, 3, 4)[0], k)
    call_op("kv_truncate", c, 0)
    assert call_op("kv_length", c, 0) == call_op("kv_length", c, 1) == 0
    np.testing.assert_array_equal(call_op("kv_cross", c, 1)[0], ck)
    np.testing.assert_array_equal(call_op("kv_cross", c, 1)[1], cv)
    k2, v2 = kv(rng, 2, 3, 8, 4)  # the whole max_len is free again
    np.testing.assert_array_equal(call_op("kv_append", c, 0, k2, v2)[1], v2)
    empty = call_op("kv_cache", 1, 0, 1, 1, 0)  # batch 0, max_len 0
    call_op("kv_truncate", empty, 0)


def test_views_held_across_truncate_keep_what_they_showed(rng):
    """The appends after a truncate overwrite the dropped positions; a view handed out
    before, still alive, must not see that (the kept prefix moves to fresh storage)."""
    c = call_op("kv_cache", 2, 3, 2, 4, 10)
    k, v = kv(rng, 3, 2, 6, 4)
    held = [call_op("kv_append", c, layer, k, v) for layer in range(2)]
    call_op("kv_truncate", c, 2)
    k2, v2 = kv(rng, 3, 2, 5, 4)
    for layer in range(2):
        got = call_op("kv_append", c, layer, k2, v2)
        np.testing.assert_array_equal(got[0], np.concatenate([k[:, :, :2], k2], 2))
        np.testing.assert_array_equal(got[1], np.concatenate([v[:, :, :2], v2], 2))
    for views in held:
        np.testing.assert_array_equal(views[0], k)
        np.testing.assert_array_equal(views[1], v)


VERIFY_PROGRAM = """# tensorvm ir 1
def verify(prefix_k: Tensor, prefix_v: Tensor, prop_k: Tensor, prop_v: Tensor, keep: int, bonus_k: Tensor, bonus_v: Tensor) -> tuple[Tensor, Tensor, int]:
    cache = kv_cache(2, 1, 2, 4, 12)
    a0, b0 = kv_append(cache, 0, prefix_k, prefix_v)
    a1, b1 = kv_append(cache, 1, prefix_k, prefix_v)
    c0, d0 = kv_append(cache, 0, prop_k, prop_v)
    c1, d1 = kv_append(cache, 1, prop_k, prop_v)
    cache2 = kv_truncate(cache, keep)
    k_all, v_all = kv_append(cache2, 1, bonus_k, bonus_v)
    n = kv_length(cache2, 0)
    return k_all, v_all, n
"""


def test_in_a_program(rng):
    pk, pv = kv(rng, 1, 2, 3, 4)
    xk, xv = kv(rng, 1, 2, 4, 4)
    bk, bv = kv(rng, 1, 2, 1, 4)
    k_all, v_all, n = Session(Program.from_text(VERIFY_PROGRAM)).run("verify", [pk, pv, xk, xv, 5, bk, bv])
    assert n == 5
    np.testing.assert_array_equal(k_all, np.concatenate([pk, xk[:, :, :2], bk], 2))
    np.testing.assert_array_equal(v_all, np.concatenate([pv, xv[:, :, :2], bv], 2))


@pytest.mark.parametrize("call, message", [
    (lambda c: call_op("kv_truncate", c, -1), "kv_truncate: length -1 is negative"),
    (lambda c: call_op("kv_truncate", c, 3), "kv_truncate: length 3 is beyond the filled length: layer 0 holds 2"),
    (lambda c: call_op("kv_truncate", c, 2), "kv_truncate: length 2 is beyond the filled length: layer 1 holds 1"),
    (lambda c: call_op("kv_truncate", np.zeros(3, np.float32), 0), "kv_truncate: argument 'cache' must be a KVCache"),
    (lambda c: call_op("kv_truncate", c, 1.5), "kv_truncate: argument 'length'"),
])
def test_errors(call, message):
    c = call_op("kv_cache", 2, 1, 2, 3, 4)
    z = np.zeros((1, 2, 2, 3), np.float32)
    call_op("kv_append", c, 0, z, z)
    call_op("kv_append", c, 1, z[:, :, :1], z[:, :, :1])
    with pytest.raises(tensorvm.VMError, match=message):
        call(c)
    assert call_op("kv_length", c, 0) == 2  # a refused truncate changes nothing


@pytest.mark.parametrize("args, message", [
    ((-1,), "kv_truncate: length -1 is negative"),
    ((2,), "kv_truncate: length 2 is beyond the filled length: layer 1 holds 1"),
    ((1.5,), "kv_truncate: argument 'length' must be an int"),
])
def test_reference_errors(args, message):
    r = ref.kv_cache(2, 1, 2, 3, 4)
    z = np.zeros((1, 2, 2, 3), np.float32)
    ref.kv_append(r, 0, z, z)
    ref.kv_append(r, 1, z[:, :, :1], z[:, :, :1])
    with pytest.raises(ref.OpError, match=message):
        ref.kv_truncate(r, *args)
    with pytest.raises(ref.OpError, match="kv_truncate: argument 'cache' must be a KVCache"):
        ref.kv_truncate(z, 0)
