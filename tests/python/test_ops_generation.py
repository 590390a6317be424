"""Generation ops: the seeded generator (rng, rand, multinomial) and the option checks
(option_index, check), C++ kernels against the numpy reference.

The generator must give the same stream in the VM and in the reference (so a replay
draws what the VM draws) and on every machine: the first outputs of seed 0 are pinned
to splitmix64's published values."""
import numpy as np
import pytest

from tensorvm import _C
from tensorvm import reference as ref
from tensorvm._C import call_op

VMError = _C.VMError


def test_splitmix64_stream_is_pinned():
    g = ref.Rng(0)
    assert [hex(int(x)) for x in g.next_u64(3)] == ["0xe220a8397b1dcdaf", "0x6e789e6aa1b965f4", "0x6c45d188009454f"]
    # rand uses the top 24 bits of each output
    u = call_op("rand", call_op("rng", 0), [3])
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u, np.array([0xe220a8, 0x6e789e, 0x06c45d], np.float32) / 2 ** 24)


@pytest.mark.parametrize("seed", [0, 1, 12345, -7, 2 ** 62])
def test_rand_matches_reference(seed):
    c, r = call_op("rng", seed), ref.rng(seed)
    for shape in ([4, 5], [0], [7], [2, 1, 3]):
        np.testing.assert_array_equal(call_op("rand", c, shape), ref.rand(r, shape))
    u = ref.rand(ref.rng(seed), [20000])
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01


def test_multinomial_matches_reference_and_draws_without_replacement(rng):
    probs = rng.random((6, 50)).astype(np.float32)
    probs[:, ::3] = 0.0  # zero weights are never drawn
    probs[2] = 0.0
    probs[2, [5, 17, 40, 41]] = [1e-30, 0.5, 0.25, 3.0]
    for n in (1, 4, 10):
        c, r = call_op("rng", 99), ref.rng(99)
        for _ in range(3):  # the generator advances in place
            got = call_op("multinomial", probs if n < 5 else probs[[0, 1, 3]], c, n)
            want = ref.multinomial(probs if n < 5 else probs[[0, 1, 3]], r, n)
            np.testing.assert_array_equal(got, want)
            assert got.dtype == np.int64
            for row, p in zip(got, probs if n < 5 else probs[[0, 1, 3]]):
                assert len(set(row.tolist())) == n and (p[row] > 0).all()
    one = call_op("multinomial", probs[0], call_op("rng", 3), 2)
    assert one.shape == (2,)
    np.testing.assert_array_equal(one, ref.multinomial(probs[0], ref.rng(3), 2))


def test_multinomial_frequencies():
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.4], np.float32)
    draws = call_op("multinomial", np.tile(p, (20000, 1)), call_op("rng", 5), 1)[:, 0]
    freq = np.bincount(draws, minlength=5) / draws.size
    np.testing.assert_allclose(freq, p, atol=0.015)
    # without replacement, the second draw follows the renormalised rest
    pairs = call_op("multinomial", np.tile(p, (20000, 1)), call_op("rng", 6), 2)
    first_is_4 = pairs[:, 0] == 4
    second = np.bincount(pairs[first_is_4, 1], minlength=5) / first_is_4.sum()
    np.testing.assert_allclose(second, np.array([0.1, 0, 0.2, 0.3, 0]) / 0.6, atol=0.03)


def test_multinomial_errors():
    g = call_op("rng", 0)
    with pytest.raises(VMError, match="num_samples must be in"):
        call_op("multinomial", np.array([[0.5, 0.0, 0.5]], np.float32), g, 4)
    with pytest.raises(VMError, match="non-negative"):
        call_op("multinomial", np.array([[0.5, -0.1]], np.float32), g, 1)
    with pytest.raises(VMError, match="non-negative"):
        call_op("multinomial", np.array([[np.nan, 1.0]], np.float32), g, 1)
    with pytest.raises(VMError, match="f32"):
        call_op("multinomial", np.array([[1, 2]]), g, 1)
    with pytest.raises(VMError, match="Rng"):
        call_op("multinomial", np.ones((1, 2), np.float32), call_op("kv_cache", 1, 1, 1, 1, 1), 1)
    with pytest.raises(ref.OpError, match="num_samples must be in"):
        ref.multinomial(np.array([[0.5, 0.0, 0.5]], np.float32), ref.rng(0), 4)
    # zero weights come last, in index order, once the non-zero ones are drawn
    p = np.array([[0.0, 0.3, 0.0, 0.7, 0.0]], np.float32)
    got = call_op("multinomial", p, call_op("rng", 1), 5)
    assert sorted(got[0, :2].tolist()) == [1, 3] and got[0, 2:].tolist() == [0, 2, 4]
    np.testing.assert_array_equal(got, ref.multinomial(p, ref.rng(1), 5))


def test_option_index():
    for x, want in ((False, 0), (True, 1), ("never", 2)):
        assert call_op("option_index", x, False, True, "never", what="early_stopping") == want
        assert ref.option_index(x, False, True, "never", what="early_stopping") == want
    assert call_op("option_index", 2, 1, 2.0) == ref.option_index(2, 1, 2.0) == 1
    assert call_op("option_index", None, 0, None) == ref.option_index(None, 0, None) == 1
    # a bool is not an int here (1 does not match True)
    with pytest.raises(VMError, match='early_stopping must be one of False, True, "never", got 1'):
        call_op("option_index", 1, False, True, "never", what="early_stopping")
    with pytest.raises(ref.OpError, match='early_stopping must be one of False, True, "never", got "always"'):
        ref.option_index("always", False, True, "never", what="early_stopping")
    with pytest.raises(VMError, match='value must be one of "a", "b", got "c"'):
        call_op("option_index", "c", "a", "b")


def test_check():
    assert call_op("check", True, "fine") is True and ref.check(True, "fine") is True
    assert call_op("check", np.array([True]), "fine") is True
    with pytest.raises(VMError, match="num_beams must be at least 1"):
        call_op("check", False, "num_beams must be at least 1")
    with pytest.raises(ref.OpError, match="num_beams must be at least 1"):
        ref.check(np.array(False), "num_beams must be at least 1")
    with pytest.raises(VMError, match="bool"):
        call_op("check", 1, "x")
