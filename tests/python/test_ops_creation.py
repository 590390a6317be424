"""Creation and conversion ops: C++ kernels against the numpy reference and literal
expectations, including zero-size shapes, dtype rules and errors."""
import numpy as np
import pytest

from tensorvm._C import call_op
from op_checks import check_error, check_exact, check_signature

F32, I64, I32, BOOL = np.float32, np.int64, np.int32, np.bool_
DTYPES = {"f32": F32, "i64": I64, "i32": I32, "bool": BOOL}
ALL = ["arange", "full", "zeros", "ones", "full_like", "zeros_like", "cast", "tensor"]


def test_signatures_match_reference():
    for name in ALL:
        assert check_signature(name, "creation")["outputs"] == ["Tensor"], name


@pytest.mark.parametrize("start, end, step", [(0, 5, 1), (2, 9, 3), (5, 0, -1), (5, 0, -2), (0, 0, 1), (3, 1, 1),
                                              (-7, 7, 4), (0, 1000, 7), (10, -10, -3), (2**62, 2**62 + 3, 1),
                                              (-(2**63), -(2**63) + 2, 1), (0, 2**63 - 1, 2**61)])
@pytest.mark.parametrize("dtype", ["i64", "i32", "f32"])
def test_arange(start, end, step, dtype):
    if dtype == "i32" and (abs(start) >= 2**31 or abs(end) >= 2**31):
        check_error("arange", start, end, step, dtype=dtype, match=r"outside the i32 range")
        return
    got = check_exact("arange", start, end, step, dtype=dtype)
    np.testing.assert_array_equal(got, np.array(range(start, end, step), np.float64 if dtype == "f32" else object)
                                  .astype(DTYPES[dtype]))


def test_arange_defaults():
    got = call_op("arange", 2, 6)
    assert got.dtype == I64 and got.tolist() == [2, 3, 4, 5]
    assert call_op("arange", 0, 3, dtype="f32").tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("args, kwargs, match", [
    ((0, 5, 0), {}, r"step must not be zero"),
    ((0, 5), {"dtype": "bool"}, r'dtype must be "i64", "i32" or "f32"'),
    ((0, 5), {"dtype": "f64"}, r'dtype must be "f32", "i64", "i32" or "bool"'),
    ((0, 2**31 + 5), {"dtype": "i32"}, r"outside the i32 range"),
    ((-(2**62), 2**62), {}, r"too long"),
    ((0, 2.5), {}, r"argument 'end' must be an int"),
])
def test_arange_errors(args, kwargs, match):
    check_error("arange", *args, match=match, **kwargs)


@pytest.mark.parametrize("shape", [[], [3], [2, 3, 4, 5], [0], [2, 0, 3], 4])
def test_full_zeros_ones(shape):
    for dtype, value in [("f32", 1.5), ("f32", -np.inf), ("f32", 3), ("i64", -(2**62)), ("i32", 7), ("bool", True),
                         ("f32", 1e30)]:
        got = check_exact("full", shape, value, dtype=dtype)
        assert (got == DTYPES[dtype](value)).all()
    got = check_exact("full", shape, np.nan)
    assert got.dtype == F32 and np.isnan(got).all()
    for dtype in DTYPES:
        z = check_exact("zeros", shape, dtype=dtype)
        o = check_exact("ones", shape, dtype)
        assert not z.any() and o.all()
        expect = tuple(shape) if isinstance(shape, list) else (shape,)
        assert z.shape == expect and z.dtype == DTYPES[dtype]
    assert call_op("zeros", [2]).dtype == F32 and call_op("ones", [2]).dtype == F32


@pytest.mark.parametrize("name, args, match", [
    ("full", ([2], 1.5, "i64"), r"value is .*1.5.*an i64 tensor needs an int scalar"),
    ("full", ([2], 1, "bool"), r"a bool tensor needs a bool scalar"),
    ("full", ([2], True, "f32"), r"value is a bool scalar"),
    ("full", ([2], 2**40, "i32"), r"does not fit an i32 tensor"),
    ("full", ([2, -1], 0.0), r"shape must not have negative sizes"),
    ("full", ([2], "a"), r"value must be an int, float or bool scalar"),
    ("zeros", ([2], "float64"), r'dtype must be "f32", "i64", "i32" or "bool", got .*float64'),
    ("ones", ([-3],), r"shape must not have negative sizes"),
])
def test_full_errors(name, args, match):
    check_error(name, *args, match=match)


def test_like(rng):
    for shape in [(), (3,), (2, 3, 4, 5), (0, 3)]:
        for dt in (F32, I64, I32, BOOL):
            x = np.zeros(shape, dt)
            v = True if dt == BOOL else 3
            got = check_exact("full_like", x, v)
            assert got.dtype == dt and got.shape == shape
            check_exact("zeros_like", x)
            check_exact("zeros_like", x, dtype="f32")
            check_exact("full_like", x, 2.5, "f32")
            check_exact("full_like", x, False, dtype="bool")
    check_error("full_like", np.zeros(3, I64), 0.5, match=r"needs an int scalar")
    check_error("full_like", np.zeros(3, F32), 1, dtype="x", match=r'dtype must be "f32"')
    check_error("zeros_like", np.zeros(3, F32), 5, match=r"dtype must be")


@pytest.mark.parametrize("src", ["f32", "i64", "i32", "bool"])
@pytest.mark.parametrize("dst", ["f32", "i64", "i32", "bool"])
def test_cast(rng, src, dst):
    for shape in [(), (7,), (2, 3, 4, 5), (0, 2)]:
        if src == "f32":
            x = np.asarray(rng.uniform(-1e4, 1e4, shape)).astype(F32)
        elif src == "bool":
            x = np.asarray(rng.random(shape) < 0.5)
        else:
            x = np.asarray(rng.integers(-(2**40) if src == "i64" else -(2**31), 2**31, shape)).astype(DTYPES[src])
        check_exact("cast", x, dst)


def test_cast_hand_values():
    x = np.array([-2.7, -0.5, 0.5, 2.7, -0.0, 1e9], F32)
    np.testing.assert_array_equal(call_op("cast", x, "i64"), [-2, 0, 0, 2, 0, 1000000000])
    np.testing.assert_array_equal(call_op("cast", x, "i32"), [-2, 0, 0, 2, 0, 1000000000])
    np.testing.assert_array_equal(call_op("cast", np.array([0, -0.0, np.nan, 1e-30, np.inf], F32), "bool"),
                                  [False, False, True, True, True])
    np.testing.assert_array_equal(call_op("cast", np.array([True, False]), "f32"), [1.0, 0.0])
    np.testing.assert_array_equal(call_op("cast", np.array([2**31 + 5, -(2**31) - 1], I64), "i32"), [-(2**31) + 5, 2**31 - 1])
    np.testing.assert_array_equal(call_op("cast", np.array([2**24 + 1], I64), "f32"), [2**24])
    np.testing.assert_array_equal(call_op("cast", np.array([-(2.0**63)], F32), "i64"), [-(2**63)])


@pytest.mark.parametrize("x, dtype, match", [
    (np.array([1.0, np.nan], F32), "i64", r"x has the value nan at flat index 1, which cannot be cast to i64"),
    (np.array([np.inf], F32), "i32", r"value inf at flat index 0"),
    (np.array([0.0, 3e9], F32), "i32", r"cannot be cast to i32"),
    (np.array([2.0**63], F32), "i64", r"cannot be cast to i64"),
    (np.zeros(2, F32), "f16", r'dtype must be "f32", "i64", "i32" or "bool"'),
    (np.zeros(2, np.int8), "f32", r"x .*(i8|int8)"),
])
def test_cast_errors(x, dtype, match):
    check_error("cast", x, dtype, match=match)


def test_tensor():
    for value, dtype, want_dt in [(3, None, I64), (2.5, None, F32), (True, None, BOOL), (3, "i32", I32), (3, "f32", F32),
                                  (-np.inf, None, F32), (False, "bool", BOOL), (-(2**63), None, I64)]:
        got = check_exact("tensor", value, dtype)
        assert got.shape == () and got.dtype == want_dt and got == value
    check_error("tensor", 2.5, "i64", match=r"needs an int scalar")
    check_error("tensor", 1, "bool", match=r"needs a bool scalar")
    check_error("tensor", 2**40, "i32", match=r"does not fit an i32 tensor")
    check_error("tensor", [1, 2], match=r"value must be an int, float or bool scalar")
