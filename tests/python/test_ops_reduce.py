"""Reductions, softmax, topk, cumsum, item: C++ kernels against the numpy reference and
hand-computed values (ties, NaN, -inf rows, zero-size dims), and errors."""
import math

import numpy as np
import pytest

from tensorvm import reference as ref
from tensorvm._C import call_op, registry
from op_checks import check, check_error, check_signature, compare, rand  # noqa: E402,F401

F32, I64, I32, BOOL = np.float32, np.int64, np.int32, np.bool_

ALL = ["sum", "mean", "max", "min", "any", "all", "argmax", "argmin", "softmax", "log_softmax", "topk", "cumsum", "item"]


def test_signatures_match_reference():
    for name in ALL:
        check_signature(name, "reduction")
    reg = {d["name"]: d for d in registry()}
    assert reg["topk"]["outputs"] == ["Tensor", "Tensor"] and reg["item"]["outputs"] == ["Any"]


# ---------------------------------------------------------------- sum, mean, max, min

# (shape, dim) pairs: None, ints, negative, lists (adjacent, non-adjacent), size-1 dims, zero-size.
DIM_CASES = [((), None), ((), 0), ((), [-1]), ((7,), None), ((7,), 0), ((2, 3, 4, 5), None), ((2, 3, 4, 5), -1),
             ((2, 3, 4, 5), 0), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), [1, 2]), ((2, 3, 4, 5), [0, 2]),
             ((2, 3, 4, 5), [3, 0, 1]), ((2, 1, 4, 1), [1, 2]), ((2, 1, 4, 1), [0, 2]), ((3, 1), 1),
             ((0, 4), 1), ((4, 0), 0), ((2, 0, 3), [0, 2]), ((5, 600), -1), ((600, 5), 0), ((3, 300, 2), 1)]


@pytest.mark.parametrize("shape, dim", DIM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean(rng, shape, dim, keepdim):
    x = rand(rng, shape)
    check("sum", x, dim, keepdim)
    check("mean", x, dim=dim, keepdim=keepdim)
    for dt in (I64, I32, BOOL):
        check("sum", rand(rng, shape, dt, -100, 100), dim, keepdim=keepdim)


@pytest.mark.parametrize("shape, dim", DIM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min(rng, name, shape, dim, keepdim):
    for dt in (F32, I64, I32):
        x = rand(rng, shape, dt, -100, 100)
        if 0 in shape:
            out_empty = any(s == 0 for i, s in enumerate(shape)
                            if not (dim is None or i in [d % len(shape) for d in np.atleast_1d(dim)]))
            if not out_empty:
                check_error(name, x, dim, keepdim, match=r"cannot reduce over a zero-size dimension")
                continue
        check(name, x, dim, keepdim)


@pytest.mark.parametrize("shape, dim", DIM_CASES)
@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all(rng, name, shape, dim):
    for p in (0.0, 0.5, 1.0):
        x = np.asarray(rng.random(shape) < p)
        check(name, x, dim)
        check(name, x, dim, keepdim=True)


def test_reduce_hand_values():
    x = np.array([[1, 2, 3], [4, 5, 6]], F32)
    np.testing.assert_array_equal(call_op("sum", x), np.float32(21))
    np.testing.assert_array_equal(call_op("sum", x, 0), [5, 7, 9])
    np.testing.assert_array_equal(call_op("sum", x, [1], keepdim=True), [[6], [15]])
    np.testing.assert_array_equal(call_op("mean", x, -1), [2, 5])
    assert call_op("sum", np.array([True, True, False])).dtype == I64
    assert call_op("sum", np.array([True, True, False])) == 2
    assert np.isnan(call_op("mean", np.zeros((2, 0), F32), 1)).all()
    assert call_op("sum", np.zeros((0,), F32)) == 0
    m = call_op("max", np.array([[1, np.nan, 3], [1, 2, -np.inf]], F32), 1)
    assert np.isnan(m[0]) and m[1] == 2
    assert call_op("min", np.array([-np.inf, 0, np.inf], F32)) == -np.inf
    np.testing.assert_array_equal(call_op("any", np.zeros((2, 0), BOOL), 1), [False, False])
    np.testing.assert_array_equal(call_op("all", np.zeros((2, 0), BOOL), 1), [True, True])
    # i64 sums wrap like torch
    assert call_op("sum", np.array([2**63 - 1, 1], I64)) == -(2**63)


def test_sum_precision(rng):
    # Double accumulation: a long f32 row whose sum cancels almost exactly.
    x = rand(rng, (59514,), F32, -1, 1)
    x = np.concatenate([x, -x[::-1]]) + F32(1e-4)
    check("sum", x, rtol=1e-4)
    check("mean", x.reshape(2, -1), 1, rtol=1e-4)
    big = np.full(10000, 1e30, F32)
    check("sum", big)


@pytest.mark.parametrize("name, args, kwargs, match", [
    ("sum", (np.zeros((2, 3), F32), 2), {}, r"dim 2 is out of range for x f32\[2, 3\] \(expected -2..1\)"),
    ("sum", (np.zeros((2, 3), F32), [0, -2]), {}, r"dim -2 is repeated"),
    ("mean", (np.zeros((2, 3), F32), []), {}, r"dim must name at least one dimension"),
    ("mean", (np.zeros((2, 3), I64),), {}, r"x must be f32, got i64\[2, 3\]"),
    ("max", (np.zeros((2, 3), BOOL),), {}, r"x must be f32, i64 or i32, got bool\[2, 3\]"),
    ("min", (np.zeros((2, 0), F32), 1), {}, r"cannot reduce over a zero-size dimension of x f32\[2, 0\]"),
    ("max", (np.zeros((0,), I64),), {}, r"cannot reduce over a zero-size dimension"),
    ("any", (np.zeros(3, F32),), {}, r"x must be a bool tensor, got f32\[3\]"),
    ("all", (np.zeros(3, BOOL), 1), {}, r"dim 1 is out of range"),
    ("sum", (np.zeros((), F32), 1), {}, r"dim 1 is out of range"),
])
def test_reduce_errors(name, args, kwargs, match):
    check_error(name, *args, match=match, **kwargs)


# ---------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("shape, dim", [((), 0), ((), -1), ((1,), 0), ((7,), 0), ((31,), 0), ((33,), -1),
                                        ((2, 3, 4, 5), -1), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), 0), ((3, 59514), -1),
                                        ((0, 5), -1), ((4, 700, 3), 1), ((600, 2), 0)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(rng, name, shape, dim, keepdim):
    for dt in (F32, I64, I32):
        # Few distinct values so that ties are common: the first index must win.
        x = rand(rng, shape, dt, -3, 3)
        if dt == F32:
            x = np.asarray(np.round(x)).astype(F32)
        check(name, x, dim, keepdim)


def test_argmax_ties_nan_inf():
    row = np.zeros(100, F32)
    row[[37, 64, 99]] = 5
    assert call_op("argmax", row) == 37 and call_op("argmin", -row) == 37
    row[80] = np.nan
    assert call_op("argmax", row) == 80 and call_op("argmin", row) == 80
    row[3] = np.nan
    assert call_op("argmax", row) == 3
    r = np.full((2, 50), -np.inf, F32)
    r[1, 49] = -1e30
    np.testing.assert_array_equal(call_op("argmax", r), [0, 49])
    np.testing.assert_array_equal(call_op("argmin", r), [0, 0])
    x = np.array([[1, 9], [9, 1], [9, 9]], F32)
    np.testing.assert_array_equal(call_op("argmax", x, 0), [1, 0])
    np.testing.assert_array_equal(call_op("argmax", x, 0, keepdim=True), [[1, 0]])
    # a long row: the maximum in the vectorised middle, an equal value later
    big = np.zeros(59514, F32)
    big[[1000, 59513]] = 3
    big[17] = 2.5
    assert call_op("argmax", big) == 1000
    big[59513] = 4
    assert call_op("argmax", big) == 59513
    check("argmax", big)


@pytest.mark.parametrize("name, args, match", [
    ("argmax", (np.zeros((2, 0), F32),), r"cannot reduce over a zero-size dimension"),
    ("argmin", (np.zeros((2, 3), F32), 2), r"dim 2 is out of range"),
    ("argmax", (np.zeros(3, BOOL),), r"x must be f32, i64 or i32"),
])
def test_argmax_errors(name, args, match):
    check_error(name, *args, match=match)


# ---------------------------------------------------------------- softmax / log_softmax


@pytest.mark.parametrize("shape, dim", [((), 0), ((1,), 0), ((9,), -1), ((2, 3, 4, 5), -1), ((2, 3, 4, 5), 1),
                                        ((2, 3, 4, 5), 0), ((2, 59514), -1), ((0, 3), -1), ((3, 0), -1),
                                        ((300, 3), 0), ((4, 33), 1)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(rng, name, shape, dim):
    x = rand(rng, shape, F32, -10, 10)
    got = check(name, x, dim)
    if name == "softmax" and x.size:
        np.testing.assert_allclose(got.sum(axis=dim if x.ndim else None), 1, rtol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_inf_rows(name, dim):
    x = np.array([[-np.inf, -np.inf, -np.inf, -np.inf],
                  [1.0, -np.inf, 2.0, -np.inf],
                  [1e30, -1e30, 0.0, 1e30],
                  [np.inf, 0.0, 1.0, 2.0],
                  [np.nan, 0.0, 1.0, 2.0]], F32)
    if dim == 0:
        x = np.ascontiguousarray(x.T)
    got = check(name, x, dim)
    if dim == 0:
        got = got.T
    assert np.isnan(got[0]).all()  # an all -inf row gives NaN, like torch
    assert np.isnan(got[3]).all() and np.isnan(got[4]).all()
    # torch.softmax / log_softmax values for row 1
    want = [0.2689414322376251, 0.0, 0.7310585975646973, 0.0] if name == "softmax" else \
        [-1.31326162815094, -np.inf, -0.31326165795326233, -np.inf]
    np.testing.assert_allclose(got[1], want, rtol=1e-6)
    if name == "softmax":
        assert got[1, 1] == 0 and got[1, 3] == 0  # exactly zero, not a denormal
        np.testing.assert_allclose(got[2], [0.5, 0, 0, 0.5], rtol=1e-6)


def test_softmax_errors():
    check_error("softmax", np.zeros(3, I64), match=r"x must be f32, got i64\[3\]")
    check_error("log_softmax", np.zeros((2, 3), F32), 2, match=r"dim 2 is out of range")


# ---------------------------------------------------------------- topk


@pytest.mark.parametrize("shape, k, dim", [((), 1, 0), ((), 1, -1), ((7,), 3, 0), ((7,), 7, 0), ((7,), 0, 0),
                                           ((2, 3, 4, 5), 2, -1), ((2, 3, 4, 5), 3, 1), ((2, 3, 4, 5), 1, 0),
                                           ((3, 59514), 8, -1), ((2, 2000), 2000, -1), ((2, 500), 100, 1),
                                           ((0, 5), 2, -1), ((4, 0), 0, -1), ((300, 2), 5, 0)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(rng, shape, k, dim, largest):
    for dt in (F32, I64, I32):
        x = rand(rng, shape, dt, -4, 4)  # few distinct values: many ties
        if dt == F32:
            x = np.asarray(np.round(x)).astype(F32)
        check("topk", x, k, dim, largest)
        check("topk", x, k, dim=dim, largest=largest)


def test_topk_ties_nan_inf(rng):
    x = np.array([1, 5, 3, 5, -np.inf, np.nan, 5, np.inf, np.nan], F32)
    v, i = call_op("topk", x, 6)
    np.testing.assert_array_equal(i, [5, 8, 7, 1, 3, 6])
    assert np.isnan(v[:2]).all() and v[2] == np.inf and (v[3:] == 5).all()
    v, i = call_op("topk", x, 4, largest=False)
    np.testing.assert_array_equal(i, [4, 0, 2, 1])
    compare((v, i), ref.topk(x, 4, largest=False))
    compare(call_op("topk", x, 9), ref.topk(x, 9))
    # a logits row: distinct random values with a tie planted across the heap boundary
    logits = rand(rng, (2, 59514), F32, -20, 20)
    logits[0, [10, 20000, 59000]] = 30
    logits[1, :] = -np.inf
    logits[1, 777] = 1
    v, i = check("topk", logits, 4)
    np.testing.assert_array_equal(i[0, :3], [10, 20000, 59000])
    np.testing.assert_array_equal(i[1], [777, 0, 1, 2])
    assert i.dtype == I64 and v.dtype == F32


@pytest.mark.parametrize("args, match", [
    ((np.zeros(3, F32), 4), r"k = 4 is out of range for a dimension of size 3"),
    ((np.zeros(3, F32), -1), r"k = -1 is out of range"),
    ((np.zeros((2, 3), F32), 1, 2), r"dim 2 is out of range"),
    ((np.zeros(3, BOOL), 1), r"x must be f32, i64 or i32"),
    ((np.zeros((), F32), 0), r"a 0-d x has one element and needs k = 1"),
])
def test_topk_errors(args, match):
    check_error("topk", *args, match=match)


# ---------------------------------------------------------------- cumsum, item


@pytest.mark.parametrize("shape, dim", [((), 0), ((9,), 0), ((2, 3, 4, 5), -1), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), 0),
                                        ((0, 3), 1), ((3, 0), 0), ((300, 3), 0), ((2, 5000), 1)])
def test_cumsum(rng, shape, dim):
    for dt in (F32, I64, I32, BOOL):
        check("cumsum", rand(rng, shape, dt, -100, 100), dim)


def test_cumsum_hand_values():
    np.testing.assert_array_equal(call_op("cumsum", np.array([1, 2, 3], I32), 0), [1, 3, 6])
    assert call_op("cumsum", np.array([1, 2, 3], I32), 0).dtype == I64
    np.testing.assert_array_equal(call_op("cumsum", np.array([[True, False], [True, True]]), 0), [[1, 0], [2, 1]])
    got = call_op("cumsum", np.array([1, np.inf, -np.inf, 1], F32), 0)
    assert got[0] == 1 and got[1] == np.inf and np.isnan(got[2:]).all()
    check_error("cumsum", np.zeros((2, 3), F32), 2, match=r"dim 2 is out of range")


def test_item():
    for x, want in [(np.array(2.5, F32), 2.5), (np.array([[7]], I64), 7), (np.array([-3], I32), -3),
                    (np.array([True]), True), (np.array(np.inf, F32), math.inf)]:
        got = call_op("item", x)
        assert type(got) is type(want) and got == want
        compare(got, ref.item(x))
    check_error("item", np.zeros(2, F32), match=r"x must have exactly one element, got f32\[2\]")
    check_error("item", np.zeros((1, 0), I64), match=r"exactly one element")
