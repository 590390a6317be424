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
    (np.zeros(2, F32), "f64", r'dtype must be "f32", "i64", "i32", "bool", "f16" or "bf16"'),
    (np.zeros(2, I64), "f16", r"cannot be cast to f16: f16 and bf16 convert to and from f32 only"),
    (np.zeros(2, np.float16), "bool", r"cannot be cast to bool: f16 and bf16 convert to and from f32 only"),
    (np.zeros(2, np.int8), "f32", r"x .*(i8|int8)"),
])
def test_cast_errors(x, dtype, match):
    check_error("cast", x, dtype, match=match)


def _f32_edges(rng):
    """Random f32 over the f16 and bf16 ranges plus the rounding edges: ties, overflow to
    inf, subnormals, signed zeros, inf and NaN."""
    bits = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    ties = (bits & 0xFFFFE000) | 0x1000  # f16 ties (normal range)
    bties = (bits & 0xFFFF0000) | 0x8000  # bf16 ties
    special = np.array([0.0, -0.0, 1.0, 65504, 65519.99, 65520, -65520, 1e10, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25,
                        3 * 2.0**-25, 1023.5 * 2.0**-24, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, 1.00390625,
                        1.01171875], F32)
    return np.concatenate([bits.view(F32), ties.view(F32), bties.view(F32), special,
                           rng.standard_normal(500).astype(F32)])


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_cast_16bit_round_trip(rng, half):
    """f32 -> f16/bf16 rounds to nearest even as numpy / ml_dtypes do (NaN stays NaN),
    and widening back is exact; f16 <-> bf16 goes through f32."""
    import ml_dtypes

    dt = np.float16 if half == "f16" else ml_dtypes.bfloat16
    x = _f32_edges(rng)
    got = call_op("cast", x, half)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(dt)
    assert got.dtype == np.dtype(dt) and got.shape == x.shape
    nan = np.isnan(want.astype(F32))
    np.testing.assert_array_equal(np.isnan(got.astype(F32)), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    from tensorvm.reference import ops as ref

    np.testing.assert_array_equal(ref.OPS["cast"](x, half).view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    back = call_op("cast", got, "f32")
    assert back.dtype == F32
    np.testing.assert_array_equal(back, want.astype(F32))  # exact (NaNs compare equal here)
    other = "bf16" if half == "f16" else "f16"
    check_exact("cast", got, other)
    assert call_op("cast", got, half) is not None


def test_cast_16bit_keeps_shape_and_views():
    import ml_dtypes

    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    for dt in (np.float16, ml_dtypes.bfloat16):
        h = x.astype(dt)
        # Shape ops move 16-bit tensors (transpose copies 2-byte elements).
        t = call_op("transpose", h, 0, 2)
        np.testing.assert_array_equal(call_op("cast", t, "f32"), x.transpose(2, 1, 0))
        np.testing.assert_array_equal(call_op("cast", call_op("reshape", h, [6, 4]), "f32"), x.reshape(6, 4))


def test_tensor():
    for value, dtype, want_dt in [(3, None, I64), (2.5, None, F32), (True, None, BOOL), (3, "i32", I32), (3, "f32", F32),
                                  (-np.inf, None, F32), (False, "bool", BOOL), (-(2**63), None, I64)]:
        got = check_exact("tensor", value, dtype)
        assert got.shape == () and got.dtype == want_dt and got == value
    check_error("tensor", 2.5, "i64", match=r"needs an int scalar")
    check_error("tensor", 1, "bool", match=r"needs a bool scalar")
    check_error("tensor", 2**40, "i32", match=r"does not fit an i32 tensor")
    check_error("tensor", [1, 2], match=r"value must be an int, float or bool scalar")
