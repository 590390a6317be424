"""Indexing ops (index_select, gather, scatter): C++ kernels against the numpy reference."""
import numpy as np
import pytest

from tensorvm._C import call_op
from op_checks import arr, check_error, check_exact, check_signature

DTYPES = [np.float32, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("name", ["index_select", "gather", "scatter"])
def test_signature_matches_reference(name):
    op = check_signature(name, "indexing")
    assert all(not p["has_default"] for p in op["params"])


# ---------------------------------------------------------------- index_select

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", [np.int64, np.int32])
@pytest.mark.parametrize("shape, dim, index", [
    ((4, 3, 5), 0, [3, 0, 0, 2, 1]),   # beam reordering: whole rows
    ((4, 3, 5), 1, [2, 2]),
    ((4, 3, 5), -1, [4, 0, 1]),        # single elements (inner size 1)
    ((6,), 0, [5, 0, 3]),
    ((2, 3, 4, 5), 2, [3, 1]),
    ((4, 3), 0, []),                   # empty index
    ((0, 3), 1, [2, 0]),               # zero-size x
    ((3, 0), 0, [1, 1]),
])
def test_index_select(rng, dtype, itype, shape, dim, index):
    check_exact("index_select", arr(rng, *shape, dtype=dtype), dim, np.array(index, itype))


def test_index_select_values(rng):
    x = np.array([[1e30, -np.inf], [np.inf, -1e30]], np.float32)
    got = check_exact("index_select", x, 0, np.array([1, 0, 1]))
    np.testing.assert_array_equal(got[0], x[1])


def test_index_select_errors(rng):
    x = arr(rng, 3, 4)
    check_error("index_select", x, 0, np.array([0, 3]), match=r"index 3 out of range \[0, 3\) for dim 0")
    check_error("index_select", x, 1, np.array([-1], np.int32), match=r"index -1 out of range \[0, 4\)")
    check_error("index_select", x, 0, np.array([[0]]), match="index must be 1-D")
    check_error("index_select", x, 0, np.array([0.0], np.float32), match="index must be i64 or i32")
    check_error("index_select", x, 2, np.array([0]), match=r"dim 2 out of range \[-2, 1\]", ref_match="")
    check_error("index_select", np.ones((), np.float32), 0, np.array([0]), match="0-d")


# ---------------------------------------------------------------- gather

def gather_index(rng, xshape, dim, ishape, itype=np.int64):
    return np.asarray(rng.integers(0, xshape[dim], size=ishape), itype) if xshape[dim] else np.zeros(ishape, itype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", [np.int64, np.int32])
@pytest.mark.parametrize("xshape, dim, ishape", [
    ((3, 5), 1, (3, 2)),          # top-k style: per-row picks
    ((3, 5), 0, (4, 5)),          # index longer than x along dim
    ((3, 5), 1, (2, 3)),          # index smaller than x off dim
    ((2, 3, 4), 1, (2, 3, 4)),
    ((2, 3, 4), -1, (1, 2, 7)),
    ((2, 3, 4), 0, (1, 3, 2)),
    ((6,), 0, (4,)),
    ((3, 5), 1, (3, 0)),
    ((3, 5), 1, (0, 2)),
])
def test_gather(rng, dtype, itype, xshape, dim, ishape):
    x = arr(rng, *xshape, dtype=dtype)
    check_exact("gather", x, dim, gather_index(rng, xshape, dim, ishape, itype))


def test_gather_values():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    got = call_op("gather", x, 1, np.array([[2, 0], [1, 1]]))
    np.testing.assert_array_equal(got, [[3.0, 1.0], [5.0, 5.0]])


def test_gather_errors(rng):
    x = arr(rng, 3, 4)
    check_error("gather", x, 1, np.array([[0, 4]]), match=r"index 4 out of range \[0, 4\) for dim 1")
    check_error("gather", x, 0, np.array([[-1, 0]]), match=r"index -1 out of range \[0, 3\)")
    check_error("gather", x, 1, np.array([0, 1]), match="same number of dims")
    check_error("gather", x, 1, np.zeros((4, 1), np.int64), match=r"larger than x .* in dim 0")
    check_error("gather", x, 1, np.zeros((1, 1), np.float32), match="index must be i64 or i32")
    check_error("gather", x, 2, np.zeros((1, 1), np.int64), match="dim 2 out of range")


# ---------------------------------------------------------------- scatter

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", [np.int64, np.int32])
@pytest.mark.parametrize("xshape, dim, ishape", [
    ((3, 5), 1, (3, 1)),
    ((3, 5), 0, (1, 5)),
    ((3, 5), 1, (2, 3)),
    ((2, 3, 4), 2, (2, 3, 1)),
    ((2, 3, 4), 0, (1, 2, 4)),
    ((6,), 0, (1,)),
    ((3, 5), 1, (3, 0)),
    ((0, 5), 1, (0, 2)),
])
def test_scatter_tensor_src(rng, dtype, itype, xshape, dim, ishape):
    # Unique positions along dim, so the result does not depend on write order.
    x = arr(rng, *xshape, dtype=dtype)
    perm = np.argsort(rng.random(ishape[:dim] + (xshape[dim],) + ishape[dim + 1:]), axis=dim)
    index = np.take(perm, np.arange(ishape[dim]), axis=dim)[tuple(slice(0, n) for n in ishape)].astype(itype)
    src = arr(rng, *ishape, dtype=dtype)
    got = check_exact("scatter", x, dim, index, src)
    assert got is not x


def test_scatter_values_and_input_untouched():
    x = np.zeros((2, 4), np.float32)
    got = call_op("scatter", x, 1, np.array([[3], [0]]), np.array([[7.0], [8.0]], np.float32))
    np.testing.assert_array_equal(got, [[0, 0, 0, 7], [8, 0, 0, 0]])
    assert (x == 0).all()


@pytest.mark.parametrize("dtype, value", [(np.float32, -np.inf), (np.float32, 1e30), (np.float32, 3),
                                          (np.int64, -5), (np.int32, 7), (np.bool_, True)])
def test_scatter_scalar_src(rng, dtype, value):
    # A logits processor banning tokens: repeated indices are fine with a scalar.
    x = arr(rng, 2, 6, dtype=dtype)
    index = np.array([[1, 4, 1], [0, 0, 5]])
    got = check_exact("scatter", x, 1, index, value)
    assert got[0, 4] == value


def test_scatter_errors(rng):
    x = arr(rng, 3, 4)
    idx = np.array([[0], [1]])
    check_error("scatter", x, 1, np.array([[4]]), np.ones((1, 1), np.float32), match=r"index 4 out of range \[0, 4\)")
    check_error("scatter", x, 1, idx, np.ones((2, 2), np.float32), match="src must be a tensor of x's dtype shaped like index")
    check_error("scatter", x, 1, idx, np.ones((2, 1), np.int64), match="src must be")
    check_error("scatter", x, 1, np.array([0, 1]), np.ones(2, np.float32), match="same number of dims")
    check_error("scatter", x, 1, np.zeros((4, 1), np.int64), np.ones((4, 1), np.float32), match="larger than x")
    check_error("scatter", x, 1, idx, True, match="bool scalar")
    check_error("scatter", x.astype(np.int64), 1, idx, 1.5, match="int scalar")
    check_error("scatter", x.astype(np.int32), 1, idx, 2**40, match="does not fit")
    check_error("scatter", x > 0, 1, idx, 1, match="bool scalar")
    check_error("scatter", x, 5, idx, 1.0, match="dim 5 out of range")
