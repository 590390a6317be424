"""KV cache ops: C++ object against the numpy reference, and its errors."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import call_op


def both(name, cpp_args, ref_args):
    return call_op(name, *cpp_args), getattr(ref, name)(*ref_args)


def test_append_reorder_cross_reset_match_reference(rng):
    c, r = both("kv_cache", (3, 4, 2, 5, 9), (3, 4, 2, 5, 9))
    for t in (3, 1, 1, 0, 2):  # a prefill, steps, and an empty append
        k = rng.standard_normal((4, 2, t, 5)).astype(np.float32)
        v = rng.standard_normal((4, 2, t, 5)).astype(np.float32)
        for layer in range(3):
            got = call_op("kv_append", c, layer, k, v)
            want = ref.kv_append(r, layer, k, v)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        idx = rng.integers(0, 4, size=4)
        call_op("kv_reorder", c, idx)
        ref.kv_reorder(r, idx)
    assert call_op("kv_length", c, 2) == ref.kv_length(r, 2) == 7
    ck = rng.standard_normal((2, 2, 6, 5)).astype(np.float32)
    assert call_op("kv_set_cross", c, 1, ck, ck) is not None
    ref.kv_set_cross(r, 1, ck, ck)
    np.testing.assert_array_equal(call_op("kv_cross", c, 1)[0], ref.kv_cross(r, 1)[0])
    call_op("kv_reset", c)
    assert call_op("kv_length", c) == 0


def test_views_are_strided_and_feed_attention(rng):
    c = call_op("kv_cache", 1, 2, 3, 4, 16)
    k = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    v = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    ka, va = call_op("kv_append", c, 0, k, v)
    np.testing.assert_array_equal(ka, k)
    q = rng.standard_normal((2, 3, 1, 4)).astype(np.float32)
    got = call_op("attention", q, ka, va)
    want = ref.attention(q, k, v)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda c: call_op("kv_append", c, 5, np.zeros((1, 2, 1, 3), np.float32), np.zeros((1, 2, 1, 3), np.float32)),
     "kv_append: layer 5 out of range"),
    (lambda c: call_op("kv_append", c, 0, np.zeros((1, 2, 1, 4), np.float32), np.zeros((1, 2, 1, 4), np.float32)),
     r"kv_append: k and v must be f32\[1, 2, t, 3\]"),
    (lambda c: call_op("kv_append", c, 0, np.zeros((1, 2, 5, 3), np.float32), np.zeros((1, 2, 5, 3), np.float32)),
     "kv_append: the cache is full"),
    (lambda c: call_op("kv_reorder", c, np.array([3])), r"kv_reorder: index 3 out of range"),
    (lambda c: call_op("kv_cross", c, 0), "kv_cross: no cross-attention K/V set for layer 0"),
    (lambda c: call_op("kv_length", np.zeros(3, np.float32)), "kv_length: argument 'cache' must be a KVCache"),
    (lambda c: call_op("kv_cache", 0, 1, 1, 1, 1), "kv_cache: invalid cache dimensions"),
])
def test_errors(call, message):
    c = call_op("kv_cache", 2, 1, 2, 3, 4)
    with pytest.raises(tensorvm.VMError, match=message):
        call(c)


def test_reference_errors():
    r = ref.kv_cache(2, 1, 2, 3, 4)
    with pytest.raises(ref.OpError, match="kv_append: the cache is full"):
        ref.kv_append(r, 0, np.zeros((1, 2, 5, 3), np.float32), np.zeros((1, 2, 5, 3), np.float32))
    with pytest.raises(ref.OpError, match="kv_cross: no cross-attention"):
        ref.kv_cross(r, 0)


def test_if_none():
    assert call_op("if_none", None, 3) == ref.if_none(None, 3) == 3
    assert call_op("if_none", 5, 3) == ref.if_none(5, 3) == 5


@pytest.mark.parametrize("batch", [1, 4, 7])
def test_reorder_against_reference_with_views_released_or_held(rng, batch):
    """kv_reorder moves only the rows that change, in place, unless a view from kv_append
    is still alive: that view keeps showing what it showed (the rows go to fresh storage).
    Indices cover identity rows, cycles (a row overwritten while another needs it) and
    repeats."""
    c, r = both("kv_cache", (2, batch, 3, 4, 12), (2, batch, 3, 4, 12))
    held = []
    for step in range(8):
        t = 2 if step == 0 else 1
        k = rng.standard_normal((batch, 3, t, 4)).astype(np.float32)
        v = rng.standard_normal((batch, 3, t, 4)).astype(np.float32)
        for layer in range(2):
            got = call_op("kv_append", c, layer, k, v)
            want = ref.kv_append(r, layer, k, v)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
            if step % 3 == 0:
                held.append((got, [w.copy() for w in want]))
            del got
        kind = step % 4
        if kind == 0:
            idx = np.arange(batch)
        elif kind == 1:
            idx = np.roll(np.arange(batch), 1)  # one cycle through every row
        elif kind == 2:
            idx = rng.integers(0, batch, size=batch)  # repeats
        else:
            idx = np.arange(batch)
            idx[rng.integers(0, batch)] = rng.integers(0, batch)  # one row changes
        call_op("kv_reorder", c, idx)
        ref.kv_reorder(r, idx)
        for views, shown in held:
            for g, w in zip(views, shown):
                np.testing.assert_array_equal(g, w)
    for layer in range(2):
        empty = np.zeros((batch, 3, 0, 4), np.float32)
        for g, w in zip(call_op("kv_append", c, layer, empty, empty), ref.kv_append(r, layer, empty, empty)):
            np.testing.assert_array_equal(g, w)
