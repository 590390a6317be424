"""prompt_lookup: the C++ kernel (linear time, Z-function) against the numpy reference
(transformers' loop as written) and against transformers' PromptLookupCandidateGenerator
itself, on random rows over small vocabularies (many repeats), edge cases and hostile rows."""
import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import call_op


def both(tokens, ngram, num):
    tokens = np.asarray(tokens, np.int64)
    got = np.asarray(call_op("prompt_lookup", tokens, ngram, num))
    want = ref.prompt_lookup(tokens, ngram, num)
    assert got.dtype == np.int64 and got.ndim == 1
    np.testing.assert_array_equal(got, want, err_msg=f"{tokens.tolist()} n={ngram} k={num}")
    return got


@pytest.mark.parametrize("vocab", [1, 2, 3, 5, 50])
def test_random_rows_match_reference(rng, vocab):
    for _ in range(300):
        length = int(rng.integers(0, 40))
        both(rng.integers(0, vocab, length), int(rng.integers(1, 6)), int(rng.integers(0, 12)))


@pytest.mark.parametrize("tokens, ngram, num, want", [
    ([], 2, 10, []), ([7], 2, 10, []), ([7, 7], 2, 10, [7]), ([1, 2, 3, 1, 2], 2, 10, [3, 1, 2]),
    ([1, 2, 3, 1, 2], 2, 1, [3]), ([1, 2, 3, 1, 2], 2, 0, []), ([1, 2, 3, 4], 3, 5, []),
    # the longest n wins over an earlier shorter match; among equal n the leftmost
    ([5, 9, 1, 2, 8, 2, 6, 1, 2], 2, 3, [8, 2, 6]), ([3, 2, 4, 2, 5, 2], 1, 2, [4, 2]),
    ([1, 2, 1, 2, 1, 2], 3, 10, [1, 2]),
    ([4, 4, 4, 4], 100, 10, [4]),  # n clipped to L - 1; the only longer match is the query
    ([-3, 2**62, -3], 1, 5, [2**62, -3]),  # any int64, negative ids included
])
def test_edge_cases(tokens, ngram, num, want):
    np.testing.assert_array_equal(both(tokens, ngram, num), np.asarray(want, np.int64))


def test_matches_transformers_generator(rng):
    torch = pytest.importorskip("torch")
    from transformers.generation.candidate_generator import PromptLookupCandidateGenerator
    for _ in range(200):
        length = int(rng.integers(2, 30))
        row = rng.integers(0, 4, length)
        ngram, num = int(rng.integers(1, 5)), int(rng.integers(1, 8))
        gen = PromptLookupCandidateGenerator(num_output_tokens=num, max_matching_ngram_size=ngram,
                                             max_length=length + num + 5)
        ids = torch.tensor(row[None], dtype=torch.long)
        out, _ = gen.get_candidates(ids)
        np.testing.assert_array_equal(both(row, ngram, num), out[0, length:].numpy())


def test_hostile_rows_are_fast_and_right():
    """Rows where the reference's loop would do ~L * n^2 comparisons: the kernel is linear.
    (Checked against the reference only where that is affordable.)"""
    row = np.zeros(200_000, np.int64)
    row[-1] = 1  # the query ends with a token found nowhere else: no match at any n
    assert call_op("prompt_lookup", row, 10_000, 10).shape == (0,)
    row = np.tile(np.arange(3, dtype=np.int64), 70_000)
    np.testing.assert_array_equal(call_op("prompt_lookup", row, 1 << 40, 4), [0, 1, 2])  # the longest match ends 3 before
    for n in (1, 2, 7):
        small = np.concatenate([np.zeros(300, np.int64), [1], np.zeros(n, np.int64)])
        both(small, 2 * n, 5)


@pytest.mark.parametrize("args, message", [
    ((np.zeros((1, 3), np.int64), 2, 3), "prompt_lookup: tokens must be a 1-D i64 tensor"),
    ((np.zeros(3, np.int32), 2, 3), "prompt_lookup: tokens must be a 1-D i64 tensor"),
    ((np.zeros(3, np.int64), 0, 3), "prompt_lookup: max_ngram_size must be at least 1, got 0"),
    ((np.zeros(3, np.int64), 2, -1), "prompt_lookup: num_tokens must not be negative, got -1"),
])
def test_bad_inputs(args, message):
    with pytest.raises(Exception, match=message.split(":", 1)[1].strip()[:30]):
        call_op("prompt_lookup", *args)
    with pytest.raises(Exception, match=message.split(":", 1)[1].strip()[:30]):
        ref.prompt_lookup(*args)
