"""Shape ops: C++ kernels against the numpy reference."""
import numpy as np
import pytest

import tensorvm
from tensorvm._C import call_op
from op_checks import arr, check_error, check_exact, check_signature

SHAPE_OPS = ["reshape", "transpose", "permute", "concat", "slice", "unsqueeze", "squeeze", "expand",
             "size", "shape", "numel", "repeat_interleave"]


DTYPES = [np.float32, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("name", SHAPE_OPS)
def test_signature_matches_reference(name):
    check_signature(name, "shape")


# ---------------------------------------------------------------- reshape

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, target", [
    ((2, 3, 4), [6, 4]), ((2, 3, 4), [-1]), ((2, 3, 4), [4, -1, 2]), ((24,), [2, 3, 2, 2]),
    ((), [1, 1]), ((1,), []), ((0, 3), [3, 0]), ((0, 3), [-1, 3]), ((2, 1, 3), [3, 2]),
])
def test_reshape(rng, dtype, shape, target):
    check_exact("reshape", arr(rng, *shape, dtype=dtype), target)


def test_reshape_errors(rng):
    x = arr(rng, 2, 3)
    check_error("reshape", x, [4, 2], match=r"cannot reshape x f32\[2, 3\] \(6 elements\) to \[4, 2\]", ref_match="")
    check_error("reshape", x, [-1, -1], match="only one dim of shape may be -1")
    check_error("reshape", x, [-2, -3], match="negative dim")
    check_error("reshape", x, [4, -1], match="cannot reshape")
    check_error("reshape", np.zeros((0, 3), np.float32), [-1, 0], match="cannot reshape")


# ---------------------------------------------------------------- transpose / permute

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, d0, d1", [
    ((3, 4), 0, 1), ((2, 3, 4), 1, 2), ((2, 3, 4, 5), 1, 2), ((2, 3, 4, 5), -1, 0), ((5,), 0, 0),
    ((2, 0, 3), 0, 2), ((1, 4, 1, 3), 0, 2), ((2, 3), 1, 1),
])
def test_transpose(rng, dtype, shape, d0, d1):
    check_exact("transpose", arr(rng, *shape, dtype=dtype), d0, d1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dims", [
    ((2, 3, 4, 5), [0, 2, 1, 3]), ((2, 3, 4, 5), [3, 2, 1, 0]), ((2, 3, 4), [-1, 0, 1]), ((7,), [0]),
    ((), []), ((2, 0, 3), [2, 1, 0]), ((64, 33), [1, 0]), ((2, 1, 3, 1, 4), [4, 3, 2, 1, 0]),
])
def test_permute(rng, dtype, shape, dims):
    check_exact("permute", arr(rng, *shape, dtype=dtype), dims)


def test_transpose_permute_errors(rng):
    x = arr(rng, 2, 3, 4)
    check_error("transpose", x, 0, 3, match=r"dim1 3 out of range \[-3, 2\]", ref_match="")
    check_error("transpose", x, -4, 0, match="dim0 -4 out of range")
    check_error("transpose", np.ones((), np.float32), 0, 0, match="0-d")
    check_error("permute", x, [0, 1], match="must list each of the 3 dims")
    check_error("permute", x, [0, 1, 1], match="must list each of the 3 dims")
    check_error("permute", x, [0, 1, 3], match="out of range")


# ---------------------------------------------------------------- concat

@pytest.mark.parametrize("dtype", DTYPES)
def test_concat(rng, dtype):
    a, b, c = arr(rng, 2, 3, 4, dtype=dtype), arr(rng, 2, 5, 4, dtype=dtype), arr(rng, 2, 0, 4, dtype=dtype)
    check_exact("concat", a, b, c, dim=1)
    check_exact("concat", a, b, dim=-2)
    check_exact("concat", a, arr(rng, 1, 3, 4, dtype=dtype))
    check_exact("concat", a, arr(rng, 2, 3, 7, dtype=dtype), dim=2)
    check_exact("concat", a)
    check_exact("concat", arr(rng, 3, dtype=dtype), arr(rng, 0, dtype=dtype), arr(rng, 4, dtype=dtype))
    check_exact("concat", arr(rng, 0, 2, dtype=dtype), arr(rng, 0, 2, dtype=dtype))
    check_exact("concat", arr(rng, 0, 2, dtype=dtype), arr(rng, 0, 3, dtype=dtype), dim=1)
    check_exact("concat", *[arr(rng, 1, 2, 1, 3, dtype=dtype) for _ in range(9)], dim=2)


def test_concat_values(rng):
    x = np.array([[1e30, -np.inf]], np.float32)
    check_exact("concat", x, np.array([[np.inf, -1e30]], np.float32), dim=0)


def test_concat_errors(rng):
    a = arr(rng, 2, 3)
    check_error("concat", match="needs at least one tensor")
    check_error("concat", a, a.astype(np.int64),
                match=r"same dtype, got f32\[2, 3\] \(tensors\[0\]\) and i64\[2, 3\] \(tensors\[1\]\)", ref_match="")
    check_error("concat", a, arr(rng, 2, 4), match=r"must match in every dim but 0")
    check_error("concat", a, arr(rng, 2, 3, 1), dim=1, match="must match")
    check_error("concat", a, a, dim=2, match="dim 2 out of range")
    check_error("concat", np.ones((), np.float32), np.ones((), np.float32), match="0-d")
    with pytest.raises(tensorvm.VMError, match=r"^concat: argument 'tensors\[1\]' must be a tensor"):
        call_op("concat", a, 3)


# ---------------------------------------------------------------- slice

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("dim, start, end, step", [
    (0, None, None, 1), (0, 1, 3, 1), (0, -2, None, 1), (0, None, -1, 1), (0, 5, 100, 1), (0, -100, 2, 1),
    (0, 3, 1, 1), (0, 1, None, 2), (1, 1, 3, 1), (1, None, None, 3), (-1, -3, -1, 1), (2, 0, 5, 2),
    (1, 7, None, 1), (2, -1, None, 1), (0, 0, 0, 1),
])
def test_slice(rng, dtype, dim, start, end, step):
    x = arr(rng, 6, 4, 5, dtype=dtype)
    check_exact("slice", x, dim, start, end, step)
    check_exact("slice", x, dim, start=start, end=end, step=step)


def test_slice_matches_python_slicing(rng):
    x = arr(rng, 7)
    for start in (None, -9, -7, -3, 0, 2, 7, 9):
        for end in (None, -9, -2, 0, 3, 7, 10):
            for step in (1, 2, 3, 8):
                np.testing.assert_array_equal(call_op("slice", x, 0, start, end, step), x[start:end:step])


def test_slice_edges(rng):
    check_exact("slice", arr(rng, 0, 3), 0, 1, 2)
    check_exact("slice", arr(rng, 3, 0), 1, 0, 1)
    check_exact("slice", arr(rng, 2, 3, 4, 5), 3, 1, None, 2)
    check_exact("slice", arr(rng, 5), 0, 1, 4, 1)
    check_exact("slice", arr(rng, 2, 3), 0, end=1)
    check_exact("slice", arr(rng, 4, 3), 1, 1, None, 2**62)  # a huge step: one element, no overflow
    check_exact("slice", arr(rng, 4, 3), 0, -2**62, 2**62, 2**62)


def test_slice_errors(rng):
    x = arr(rng, 3, 4)
    check_error("slice", x, 2, 0, 1, match=r"dim 2 out of range \[-2, 1\]", ref_match="")
    check_error("slice", x, 0, 0, 1, 0, match="step must be >= 1, got 0")
    check_error("slice", x, 0, 0, 1, -1, match="step must be >= 1")
    check_error("slice", np.ones((), np.float32), 0, match="0-d")


# ---------------------------------------------------------------- unsqueeze / squeeze

@pytest.mark.parametrize("shape, dim", [((2, 3), 0), ((2, 3), 1), ((2, 3), 2), ((2, 3), -1), ((2, 3), -3), ((), 0),
                                        ((), -1), ((0, 4), 1)])
def test_unsqueeze(rng, shape, dim):
    check_exact("unsqueeze", arr(rng, *shape), dim)
    check_exact("unsqueeze", arr(rng, *shape, dtype=np.int32), dim)


@pytest.mark.parametrize("shape, dim", [((1, 3), 0), ((2, 1), 1), ((2, 1), -1), ((1,), 0), ((0, 1, 2), 1),
                                        ((1, 1, 1), -2)])
def test_squeeze(rng, shape, dim):
    check_exact("squeeze", arr(rng, *shape), dim)
    check_exact("squeeze", arr(rng, *shape, dtype=np.bool_), dim)


def test_unsqueeze_squeeze_errors(rng):
    x = arr(rng, 2, 3)
    check_error("unsqueeze", x, 3, match=r"dim 3 out of range \[-3, 2\]")
    check_error("unsqueeze", x, -4, match="out of range")
    check_error("unsqueeze", np.ones((1,) * 8, np.float32), 0, match="maximum of 8 dims")
    check_error("squeeze", x, 0, match=r"dim 0 of x f32\[2, 3\] has size 2, not 1", ref_match="")
    check_error("squeeze", x, 2, match="out of range")
    check_error("squeeze", np.ones((), np.float32), 0, match="0-d")


# ---------------------------------------------------------------- expand

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, target", [
    ((3, 1), [3, 4]), ((1,), [5]), ((), [2, 3]), ((2, 1, 3), [4, 2, 5, 3]), ((2, 1, 3), [-1, 4, -1]),
    ((3,), [2, 3]), ((1, 1), [0, 4]), ((2, 3), [2, 3]), ((0, 1), [0, 6]), ((1, 4), [2, -1]),
])
def test_expand(rng, dtype, shape, target):
    check_exact("expand", arr(rng, *shape, dtype=dtype), target)


def test_expand_errors(rng):
    x = arr(rng, 2, 3)
    check_error("expand", x, [3, 3], match=r"cannot expand f32\[2, 3\] to \[3, 3\]", ref_match="")
    check_error("expand", x, [3], match="fewer dimensions")
    check_error("expand", x, [-1, 2, 3], match="cannot expand")
    check_error("expand", x, [2, -2], match="cannot expand")


# ---------------------------------------------------------------- size / shape / numel

@pytest.mark.parametrize("shape", [(), (5,), (2, 0, 3), (2, 3, 4, 5), (1,) * 8])
def test_shape_queries(rng, shape):
    x = arr(rng, *shape)
    assert check_exact("shape", x) == list(shape)
    assert check_exact("numel", x) == int(np.prod(shape))
    for d in range(-len(shape), len(shape)):
        assert check_exact("size", x, d) == shape[d]


def test_shape_query_errors(rng):
    check_error("size", arr(rng, 2, 3), 2, match=r"dim 2 out of range \[-2, 1\]", ref_match="")
    check_error("size", np.ones((), np.float32), 0, match="0-d")


# ---------------------------------------------------------------- repeat_interleave

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, repeats, dim", [
    ((2, 3, 4), 3, 0), ((2, 3, 4), 2, 1), ((2, 3, 4), 2, -1), ((5,), 4, 0), ((2, 3), 1, 0), ((2, 3), 0, 1),
    ((0, 3), 2, 0), ((2, 0), 3, 0),
])
def test_repeat_interleave(rng, dtype, shape, repeats, dim):
    check_exact("repeat_interleave", arr(rng, *shape, dtype=dtype), repeats, dim)


def test_repeat_interleave_beams(rng):
    enc = arr(rng, 2, 7, 16)
    got = check_exact("repeat_interleave", enc, 4, 0)
    np.testing.assert_array_equal(got[4:8], np.broadcast_to(enc[1], (4, 7, 16)))


def test_repeat_interleave_errors(rng):
    x = arr(rng, 2, 3)
    check_error("repeat_interleave", x, -1, 0, match="repeats must be >= 0, got -1")
    check_error("repeat_interleave", x, 2, 2, match="dim 2 out of range")
    check_error("repeat_interleave", np.ones((), np.float32), 2, 0, match="0-d")
