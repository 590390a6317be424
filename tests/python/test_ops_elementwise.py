"""Elementwise ops: C++ kernels against the numpy reference (and hand-computed values),
broadcasting, scalars, special values, int dtypes, errors."""
import math

import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import Program, Session, call_op, registry
from op_checks import check, check_error, check_signature, compare, rand  # noqa: E402,F401

F32, I64, I32, BOOL = np.float32, np.int64, np.int32, np.bool_

ARITH = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv", "remainder"]
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
LOGIC = ["logical_and", "logical_or", "logical_xor"]
UNARY_F32 = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "erf", "gelu"]
ALL = ARITH + CMP + LOGIC + ["logical_not"] + UNARY_F32 + ["neg", "abs", "relu", "where", "masked_fill", "clamp"]

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e-30, 1e30, -1e30, 80.0, -80.0, 100.0, -100.0,
                    np.inf, -np.inf, np.nan, 3.0, -3.0, 20.0, -20.0], F32)


def nonzero(rng, shape, dtype):
    y = rand(rng, shape, dtype, -6, 6)
    return np.where(y == 0, dtype(3), y).astype(dtype)


# ---------------------------------------------------------------- signatures


def test_signatures_match_reference():
    reg = {d["name"]: d for d in registry()}
    for name in ALL:
        check_signature(name, "elementwise")
    for name in ARITH + CMP + LOGIC + ["logical_not", "neg", "abs"]:
        assert reg[name]["outputs"] == ["Any"], name
    for name in UNARY_F32 + ["relu", "where", "masked_fill", "clamp"]:
        assert reg[name]["outputs"] == ["Tensor"], name


# ---------------------------------------------------------------- binary arithmetic

SHAPES = [((), ()), ((5,), (5,)), ((2, 3, 4, 5), (2, 3, 4, 5)), ((2, 3, 4, 5), (5,)), ((2, 1, 4, 1), (3, 1, 5)),
          ((4, 1), ()), ((), (2, 3)), ((0, 3), (3,)), ((2, 0, 3), (1, 3)), ((3, 1), (1, 0)), ((1000,), (1000,)),
          ((7, 33), (7, 1))]


@pytest.mark.parametrize("name", ARITH)
@pytest.mark.parametrize("shapes", SHAPES)
def test_arith_f32(rng, name, shapes):
    x = rand(rng, shapes[0])
    y = rand(rng, shapes[1])
    if name == "pow":
        x = np.asarray(np.abs(x) + F32(0.1))
        y = rand(rng, shapes[1], F32, -3, 3)
    check(name, x, y, rtol=1e-5 if name != "pow" else 2e-5)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum", "floordiv", "remainder"])
@pytest.mark.parametrize("dtype", [I64, I32])
@pytest.mark.parametrize("shapes", SHAPES[:8])
def test_arith_int(rng, name, dtype, shapes):
    x = rand(rng, shapes[0], dtype, -50, 50)
    y = nonzero(rng, shapes[1], dtype)
    check(name, x, y)


@pytest.mark.parametrize("name", ARITH)
def test_arith_tensor_scalar(rng, name):
    x = rand(rng, (3, 4))
    if name == "pow":
        x = np.abs(x) + F32(0.5)
    for s in (2, 2.5, -3, 0.25):
        check(name, x, s)
        check(name, s, x)
    if name not in ("div", "pow"):
        xi = rand(rng, (3, 4), I64, -20, 20)
        xi = np.where(xi == 0, 1, xi).astype(I64)
        for s in (3, -7):
            check(name, xi, s)
            check(name, s, xi)
        check(name, xi.astype(I32), 5)


def test_arith_hand_values():
    x = np.array([-7, 7, -8, 8, -1, 0], I64)
    np.testing.assert_array_equal(call_op("floordiv", x, 2), [-4, 3, -4, 4, -1, 0])
    np.testing.assert_array_equal(call_op("remainder", x, 3), [2, 1, 1, 2, 2, 0])
    np.testing.assert_array_equal(call_op("remainder", x, -3), [-1, -2, -2, -1, -1, 0])
    xf = np.array([-7.5, 7.5, -1.0, 1.0], F32)
    np.testing.assert_array_equal(call_op("floordiv", xf, 2.0), [-4.0, 3.0, -1.0, 0.0])
    np.testing.assert_array_equal(call_op("remainder", xf, 2.0), [0.5, 1.5, 1.0, 1.0])
    np.testing.assert_array_equal(call_op("remainder", xf, -2.0), [-1.5, -0.5, -1.0, -1.0])
    # f32 division by zero follows IEEE; maximum/minimum propagate NaN.
    got = call_op("div", np.array([1, -1, 0], F32), np.zeros(3, F32))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    got = call_op("floordiv", np.array([1, -1], F32), np.zeros(2, F32))
    assert got[0] == np.inf and got[1] == -np.inf
    m = call_op("maximum", np.array([np.nan, 1, 2], F32), np.array([0, np.nan, 1], F32))
    assert np.isnan(m[0]) and np.isnan(m[1]) and m[2] == 2
    m = call_op("minimum", np.array([np.nan, 1, 2], F32), np.array([0, np.nan, 1], F32))
    assert np.isnan(m[0]) and np.isnan(m[1]) and m[2] == 1
    # integer tensors wrap like torch
    big = np.array([2**63 - 1, -(2**63)], I64)
    np.testing.assert_array_equal(call_op("add", big, 1), [-(2**63), -(2**63) + 1])
    np.testing.assert_array_equal(call_op("floordiv", big[:1], -1), [-(2**63) + 1])
    # ... but the smallest int // -1 is an error, not a silent wrap (issue 11)
    check_error("floordiv", big, -1, match=r"integer overflow: the smallest i64 divided by -1")
    check_error("floordiv", np.array([-(2**31)], I32), np.array([-1], I32), match=r"integer overflow: the smallest i32")
    np.testing.assert_array_equal(call_op("remainder", big, -1), [0, 0])
    np.testing.assert_array_equal(call_op("mul", np.array([2**31 - 1], I32), 2), [-2])


@pytest.mark.parametrize("name", ARITH)
def test_arith_special_values(name):
    x = SPECIAL
    y = SPECIAL[::-1].copy()
    check(name, x, y, rtol=2e-5)
    check(name, x, 1e30)
    check(name, x, -np.inf)


def test_arith_large_magnitudes(rng):
    x = (rand(rng, (4, 5)) * F32(1e30)).astype(F32)
    y = (rand(rng, (5,)) * F32(1e30)).astype(F32)
    for name in ["add", "sub", "mul", "div", "maximum", "minimum", "floordiv", "remainder"]:
        check(name, x, y, rtol=1e-5, atol=1e25 if name == "remainder" else 1e-6)


SCALAR_CASES = [
    ("add", 2, 3, 5), ("add", 2, 0.5, 2.5), ("sub", 2, 5, -3), ("mul", 4, -2.5, -10.0), ("div", 7, 2, 3.5),
    ("div", 6, 3, 2.0), ("pow", 2, 10, 1024), ("pow", 2, -1, 0.5), ("pow", 2.0, 0.5, math.sqrt(2)),
    ("pow", -8, 3, -512), ("maximum", 3, 2, 3), ("maximum", 2, 2.5, 2.5), ("minimum", 3, 2.0, 2.0),
    ("floordiv", -7, 2, -4), ("floordiv", 7, -2, -4), ("floordiv", -7.5, 2, -4.0), ("remainder", -7, 3, 2),
    ("remainder", 7, -3, -2), ("remainder", -7.5, 2, 0.5), ("remainder", 5.0, -3, -1.0),
    ("floordiv", -1.0, math.inf, -1.0), ("maximum", math.nan, 1.0, math.nan),
]


@pytest.mark.parametrize("name, a, b, want", SCALAR_CASES)
def test_arith_scalar_scalar(name, a, b, want):
    got = call_op(name, a, b)
    assert type(got) is type(want), (got, want)
    assert got == want or (math.isnan(want) and math.isnan(got)) or math.isclose(got, want, rel_tol=1e-15)
    compare(got, ref.OPS[name](a, b))


@pytest.mark.parametrize("name, args, match", [
    ("add", (np.zeros(3, F32), np.zeros(3, I64)), r"x and y must have the same dtype, got f32\[3\] and i64\[3\]"),
    ("add", (np.zeros((2, 3), F32), np.zeros(4, F32)), r"cannot broadcast shapes \[2, 3\] and \[4\]"),
    ("mul", (np.zeros((2, 3), F32), np.zeros((3, 2), F32)), r"cannot broadcast shapes"),
    ("add", (np.zeros(3, F32), True), r"bool"),
    ("add", (np.zeros(3, I64), 1.5), r"y is .*1.5.*needs an int scalar"),
    ("sub", (2.5, np.zeros(3, I32)), r"x is .*2.5.*needs an int scalar"),
    ("add", (np.zeros(3, I32), 2**40), r"does not fit an i32 tensor"),
    ("add", (np.zeros(3, BOOL), np.zeros(3, BOOL)), r"x must be f32, i64 or i32, got bool\[3\]"),
    ("div", (np.zeros(3, I64), 2), r"x must be f32 \(use floordiv"),
    ("div", (2, np.ones(3, I32)), r"y must be f32"),
    ("pow", (np.ones(3, I64), 2), r"x must be f32"),
    ("floordiv", (np.ones(3, I64), np.array([1, 0, 2], I64)), r"integer division by zero"),
    ("remainder", (np.ones(3, I32), 0), r"integer division by zero"),
    ("floordiv", (1, 0), r"integer division by zero"),
    ("remainder", (1, 0), r"integer modulo by zero"),
    ("div", (1, 0), r"division by zero"),
    ("div", (1.0, 0.0), r"division by zero"),
    ("floordiv", (1.5, 0), r"float floor division by zero"),
    ("remainder", (1.5, 0.0), r"float modulo by zero"),
    ("add", (2**62, 2**62), r"integer overflow"),
    ("mul", (2**40, 2**40), r"integer overflow"),
    ("pow", (3, 50), r"integer overflow"),
    ("pow", (0, -1), r"0 cannot be raised to a negative power"),
    ("pow", (-8.0, 1 / 3), r"no real result"),
    ("pow", (10.0, 400), r"out of range"),
    ("add", (True, 1), r"must be int or float scalars"),
])
def test_arith_errors(name, args, match):
    check_error(name, *args, match=match)


# ---------------------------------------------------------------- comparisons, logical


@pytest.mark.parametrize("name", CMP)
@pytest.mark.parametrize("dtype", [F32, I64, I32, BOOL])
@pytest.mark.parametrize("shapes", [((), ()), ((6,), (6,)), ((2, 3, 4, 5), (4, 1)), ((0, 2), (2,)), ((3, 1), (1, 4))])
def test_compare(rng, name, dtype, shapes):
    x = rand(rng, shapes[0], dtype, -3, 3)
    y = rand(rng, shapes[1], dtype, -3, 3)
    check(name, x, y)
    check(name, x, x)


@pytest.mark.parametrize("name", CMP)
def test_compare_scalars_and_nan(rng, name):
    check(name, SPECIAL, SPECIAL[::-1].copy())
    check(name, SPECIAL, 1)
    check(name, 0.5, SPECIAL)
    check(name, rand(rng, (3, 4), I64), 0)
    check(name, rand(rng, (3, 4), BOOL), True)
    check(name, 2, 3)
    check(name, 2, 2.0)
    check(name, True, False)
    eq = call_op("eq", np.array([np.nan, 1], F32), np.array([np.nan, 1], F32))
    np.testing.assert_array_equal(eq, [False, True])
    assert call_op("lt", 1, 2.5) is True and call_op("ge", 1, 2.5) is False


@pytest.mark.parametrize("name, args, match", [
    ("eq", (np.zeros(3, F32), np.zeros(3, I32)), r"same dtype"),
    ("lt", (np.zeros(3, I64), 0.5), r"needs an int scalar"),
    ("gt", (np.zeros(3, BOOL), 1), r"bool tensor needs a bool scalar"),
    ("ne", (np.zeros(3, F32), True), r"bool"),
    ("le", (True, 1), r"both be bools or both be numbers"),
    ("ge", (np.zeros((2, 3), F32), np.zeros((3, 3), F32)), r"cannot broadcast"),
])
def test_compare_errors(name, args, match):
    check_error(name, *args, match=match)


@pytest.mark.parametrize("name", LOGIC)
def test_logical(rng, name):
    for sx, sy in [((), ()), ((7,), (7,)), ((2, 3, 4, 5), (5,)), ((3, 1), (1, 4)), ((0, 3), (3,))]:
        check(name, rand(rng, sx, BOOL), rand(rng, sy, BOOL))
    x = rand(rng, (4, 3), BOOL)
    check(name, x, True)
    check(name, False, x)
    for a in (True, False):
        for b in (True, False):
            got = call_op(name, a, b)
            assert got is {"logical_and": a and b, "logical_or": a or b, "logical_xor": a != b}[name]
            compare(got, ref.OPS[name](a, b))


def test_logical_not(rng):
    for shape in [(), (5,), (2, 3, 4, 5), (0, 2)]:
        check("logical_not", rand(rng, shape, BOOL))
    assert call_op("logical_not", True) is False
    check_error("logical_not", np.zeros(3, F32), match=r"x must be a bool tensor or a bool")
    check_error("logical_not", 1, match=r"x must be a bool tensor or a bool")


@pytest.mark.parametrize("name", LOGIC)
def test_logical_errors(name):
    check_error(name, np.zeros(3, F32), np.zeros(3, BOOL), match=r"x must be a bool tensor or a bool, got .*f32\[3\]")
    check_error(name, np.zeros(3, BOOL), 1, match=r"y must be a bool tensor or a bool")
    check_error(name, np.zeros(3, BOOL), np.zeros(4, BOOL), match=r"cannot broadcast")


# ---------------------------------------------------------------- unary


@pytest.mark.parametrize("name", UNARY_F32)
@pytest.mark.parametrize("shape", [(), (1,), (17,), (2, 3, 4, 5), (0, 3), (3000,)])
def test_unary_f32_random(rng, name, shape):
    x = rand(rng, shape, F32, -6, 6)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.asarray(np.abs(x) + F32(1e-3))
    check(name, x)


@pytest.mark.parametrize("name", UNARY_F32)
def test_unary_f32_special(name):
    check(name, SPECIAL, rtol=2e-5)
    big = np.linspace(-90, 90, 1001, dtype=F32)
    check(name, big, rtol=2e-5)


def test_unary_hand_values():
    x = np.array([-np.inf, 0, np.inf, np.nan, -1e30, 1e30], F32)
    e = call_op("exp", x)
    assert e[0] == 0 and e[1] == 1 and e[2] == np.inf and np.isnan(e[3]) and e[4] == 0 and e[5] == np.inf
    s = call_op("sigmoid", x)
    np.testing.assert_array_equal(s[[0, 1, 2, 4, 5]], [0, 0.5, 1, 0, 1])
    si = call_op("silu", x)
    assert si[1] == 0 and si[2] == np.inf and si[4] == 0 and si[5] == 1e30 and np.isnan(si[0])
    g = call_op("gelu", np.array([-1e30, 0, 1e30, 1.0], F32))
    np.testing.assert_allclose(g, [0, 0, 1e30, 0.8413447], rtol=1e-6)
    g = call_op("gelu", np.array([-1e30, 0, 1e30, 1.0], F32), approximate="tanh")
    np.testing.assert_allclose(g, [0, 0, 1e30, 0.841192], rtol=1e-5)
    np.testing.assert_array_equal(call_op("log", np.array([0, -1, 1], F32))[[0, 2]], [-np.inf, 0])
    assert np.isnan(call_op("sqrt", np.array([-1], F32))[0])
    np.testing.assert_array_equal(call_op("rsqrt", np.array([0, 4, np.inf], F32)), [np.inf, 0.5, 0])


def test_torch_values(rng):
    """Values printed by torch 2.x for the same float32 inputs (kept literal: no torch import)."""
    x = np.array([-8.0, -3.5, -1.25, -0.1, 0.0, 0.3, 1.7, 6.0], F32)
    torch_vals = {
        ("gelu", "none"): [-0.0, -0.0008143335580825806, -0.13206221163272858, -0.04601721838116646, 0.0,
                           0.1853734403848648, 1.6242387294769287, 6.0],
        ("gelu", "tanh"): [-0.0, -0.0006161481142044067, -0.13228580355644226, -0.046017248183488846, 0.0,
                           0.18537093698978424, 1.6241059303283691, 6.0],
        ("silu", None): [-0.00268280110321939, -0.10259281098842621, -0.27837517857551575, -0.04750208184123039, 0.0,
                         0.172332763671875, 1.4374091625213623, 5.985164642333984],
        ("sigmoid", None): [0.00033535013790242374, 0.02931223064661026, 0.22270013391971588, 0.47502079606056213,
                            0.5, 0.5744425058364868, 0.8455348014831543, 0.9975274205207825],
    }
    for (name, approx), want in torch_vals.items():
        kw = {"approximate": approx} if approx else {}
        # atol: 1 + erf(x) cancels for x << 0; torch's float erf is itself ~1e-7 off there.
        np.testing.assert_allclose(call_op(name, x, **kw), np.array(want, F32), rtol=2e-6, atol=2e-7)
        np.testing.assert_allclose(ref.OPS[name](x, **kw), np.array(want, F32), rtol=2e-6, atol=2e-7)
    check("gelu", rand(rng, (4, 50), F32, -8, 8), approximate="tanh")
    a = np.array([-7.5, 7.5, -1.0, 5.25, -5.25, 0.0, 3.0, -3.0], F32)
    b = np.array([2.0, -2.0, 0.75, -1.5, 1.5, -2.0, 0.5, 0.7], F32)
    for name, want in [("floordiv", [-4.0, -4.0, -2.0, -4.0, -4.0, -0.0, 6.0, -5.0]),
                       ("remainder", [0.5, -0.5, 0.5, -0.75, 0.75, 0.0, 0.0, 0.4999999403953552])]:
        np.testing.assert_allclose(call_op(name, a, b), np.array(want, F32), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ref.OPS[name](a, b), np.array(want, F32), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", UNARY_F32)
def test_unary_f32_errors(name):
    check_error(name, np.zeros(3, I64), match=r"x must be f32, got i64\[3\]")
    with pytest.raises(tensorvm.VMError, match=rf"^{name}: argument 'x' must be a tensor"):
        call_op(name, 1.0)


def test_gelu_bad_approximate():
    check_error("gelu", np.zeros(3, F32), approximate="fast", match=r'approximate must be "none" or "tanh"')


@pytest.mark.parametrize("name", ["neg", "abs", "relu"])
@pytest.mark.parametrize("dtype", [F32, I64, I32])
def test_neg_abs_relu(rng, name, dtype):
    for shape in [(), (9,), (2, 3, 4, 5), (0, 4)]:
        check(name, rand(rng, shape, dtype, -10, 10))
    if dtype == F32:
        check(name, SPECIAL)
    else:
        info = np.iinfo(dtype)
        check(name, np.array([info.min, info.max, 0, -1], dtype))


def test_neg_abs_scalars_and_errors():
    assert call_op("neg", 3) == -3 and call_op("neg", -2.5) == 2.5 and call_op("abs", -4) == 4
    assert type(call_op("abs", -4.0)) is float
    assert call_op("relu", np.array([np.nan, -0.0, -1, 2], F32)).tolist()[1:] == [0, 0, 2]
    assert np.isnan(call_op("relu", np.array([np.nan], F32))[0])
    np.testing.assert_array_equal(call_op("abs", np.array([-(2**63)], I64)), [-(2**63)])
    check_error("neg", -(2**63), match=r"integer overflow")
    check_error("neg", True, match=r"x must be a tensor or an int/float scalar")
    check_error("abs", np.zeros(3, BOOL), match=r"x must be f32, i64 or i32, got bool\[3\]")
    check_error("relu", np.zeros(3, BOOL), match=r"x must be f32, i64 or i32")


# ---------------------------------------------------------------- where, masked_fill, clamp


@pytest.mark.parametrize("dtype", [F32, I64, I32, BOOL])
@pytest.mark.parametrize("shapes", [((), (), ()), ((6,), (6,), (6,)), ((2, 3, 4, 5), (2, 3, 4, 5), (5,)),
                                    ((2, 1, 4, 1), (3, 1, 5), (1,)), ((1, 1, 1, 7), (2, 3, 1, 7), (2, 3, 5, 7)),
                                    ((0, 3), (3,), (1, 3)), ((4, 1), (1, 0), ())])
def test_where(rng, dtype, shapes):
    c = rand(rng, shapes[0], BOOL)
    x = rand(rng, shapes[1], dtype, -9, 9)
    y = rand(rng, shapes[2], dtype, -9, 9)
    check("where", c, x, y)


def test_where_scalars(rng):
    c = rand(rng, (3, 5), BOOL)
    x = rand(rng, (3, 5))
    check("where", c, x, -np.inf)
    check("where", c, 0.0, x)
    check("where", c, 1, x)
    check("where", c, rand(rng, (5,), I64), 7)
    check("where", c, rand(rng, (1, 5), BOOL), False)
    for a, b, dt in [(1, 2, I64), (1, 2.5, F32), (0.0, -np.inf, F32), (True, False, BOOL)]:
        got = check("where", c, a, b)
        assert got.dtype == dt
    got = call_op("where", np.array([True, False]), 0.0, -np.inf)
    np.testing.assert_array_equal(got, [0, -np.inf])
    check("where", rand(rng, (2, 1, 1, 9), BOOL), rand(rng, (2, 4, 9, 9)), -1e30)


@pytest.mark.parametrize("args, match", [
    ((np.zeros(3, F32), np.zeros(3, F32), np.zeros(3, F32)), r"cond must be a bool tensor, got f32\[3\]"),
    ((np.zeros(3, BOOL), np.zeros(3, F32), np.zeros(3, I64)), r"x and y must have the same dtype"),
    ((np.zeros(3, BOOL), np.zeros(3, I64), 0.5), r"y is .*needs an int scalar"),
    ((np.zeros(3, BOOL), True, 1), r"both be bools or both be numbers"),
    ((np.zeros(3, BOOL), np.zeros(4, F32), 0.0), r"cannot broadcast shapes \[3\] and \[4\]"),
    ((np.zeros((2, 3), BOOL), np.zeros(3, F32), np.zeros((3, 1), F32)), r"cannot broadcast"),
])
def test_where_errors(args, match):
    check_error("where", *args, match=match)


@pytest.mark.parametrize("dtype, value", [(F32, -np.inf), (F32, 1e30), (F32, 2), (I64, -5), (I32, 7), (BOOL, True)])
@pytest.mark.parametrize("shapes", [((), ()), ((6,), (6,)), ((2, 3, 4, 5), (5,)), ((2, 3, 4, 5), (2, 1, 1, 5)),
                                    ((2, 3, 4, 5), ()), ((0, 3), (3,)), ((5, 59514), (1, 59514))])
def test_masked_fill(rng, dtype, value, shapes):
    x = rand(rng, shapes[0], dtype)
    m = rand(rng, shapes[1], BOOL)
    check("masked_fill", x, m, value)


@pytest.mark.parametrize("args, match", [
    ((np.zeros(3, F32), np.zeros(3, F32), 0.0), r"mask must be a bool tensor, got f32\[3\]"),
    ((np.zeros(3, F32), np.zeros((2, 3), BOOL), 0.0), r"mask bool\[2, 3\] does not broadcast to the shape of x f32\[3\]"),
    ((np.zeros(3, F32), np.zeros(4, BOOL), 0.0), r"broadcast"),
    ((np.zeros(3, I64), np.zeros(3, BOOL), 0.5), r"value is .*needs an int scalar"),
    ((np.zeros(3, F32), np.zeros(3, BOOL), True), r"value is a bool scalar"),
    ((np.zeros(3, F32), np.zeros(3, BOOL), np.zeros(1, F32)), r"value must be an int, float or bool scalar"),
])
def test_masked_fill_errors(args, match):
    check_error("masked_fill", *args, match=match)


@pytest.mark.parametrize("dtype", [F32, I64, I32])
def test_clamp(rng, dtype):
    for shape in [(), (11,), (2, 3, 4, 5), (0, 3)]:
        x = rand(rng, shape, dtype, -10, 10)
        check("clamp", x, -3, 4)
        check("clamp", x, min=0)
        check("clamp", x, max=2)
        check("clamp", x, 5, -5)  # min > max: max everywhere, like torch
    if dtype == F32:
        check("clamp", SPECIAL, -1.5, 1e30)
        check("clamp", SPECIAL, min=-np.inf)
        got = call_op("clamp", np.array([np.nan, -2, 2], F32), -1, 1)
        assert np.isnan(got[0]) and got[1] == -1 and got[2] == 1


@pytest.mark.parametrize("args, kwargs, match", [
    ((np.zeros(3, F32),), {}, r"at least one of min and max"),
    ((np.zeros(3, I64), 0.5), {}, r"min is .*needs an int scalar"),
    ((np.zeros(3, F32),), {"max": True}, r"max must be an int or float scalar or None"),
    ((np.zeros(3, F32), math.nan), {}, r"min must not be NaN"),
    ((np.zeros(3, BOOL), 0), {}, r"x must be f32, i64 or i32, got bool\[3\]"),
])
def test_clamp_errors(args, kwargs, match):
    check_error("clamp", *args, match=match, **kwargs)


# ---------------------------------------------------------------- strided views through the VM


def test_strided_views_from_kv_cache(rng):
    """kv_append hands out non-contiguous views; the broadcasting kernels read them in place."""
    text = """# tensorvm ir 1
def f(k: Tensor, y: Tensor, m: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    c = kv_cache(1, 2, 3, 4, 16)
    ka, va = kv_append(c, 0, k, k)
    a = add(ka, y)
    b = mul(2.0, va)
    w = where(m, ka, y)
    mf = masked_fill(ka, m, -1.0)
    g = gt(ka, y)
    return a, b, w, mf, g
"""
    s = Session(Program.from_text(text, ""))
    k = rand(rng, (2, 3, 5, 4))
    y = rand(rng, (3, 1, 4))
    m = rand(rng, (5, 1), BOOL)
    a, b, w, mf, g = s.run("f", [k, y, m])
    np.testing.assert_array_equal(a, k + y)
    np.testing.assert_array_equal(b, 2 * k)
    np.testing.assert_array_equal(w, np.where(m, k, y))
    np.testing.assert_array_equal(mf, np.where(m, F32(-1), k))
    np.testing.assert_array_equal(g, k > y)


@pytest.mark.usefixtures("kernel_variant")
def test_erf_and_exact_gelu_dense_against_double():
    """The vectorised erf (elementwise_math.h) within 2 ulp of erf in double over a dense
    range, tiny and huge values and the specials, on each kernel variant; exact gelu
    within its formula's cancellation error (1 + erf(x) for x << 0 is absolute)."""
    import math

    x = np.concatenate([np.linspace(-10, 10, 200001, dtype=F32),
                        np.geomspace(1e-38, 1e3, 5001).astype(F32), -np.geomspace(1e-38, 1e3, 5001).astype(F32),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.4e-45, np.finfo(F32).max], F32)])
    got = call_op("erf", x)
    want = np.array([math.erf(float(v)) for v in x])
    finite = ~np.isnan(x)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2.4e-7, atol=1.5e-45)  # + denormal spacing
    assert np.isnan(got[~finite]).all()
    assert np.signbit(got[finite]).tolist() == np.signbit(x[finite]).tolist()  # erf(-0) = -0
    g = call_op("gelu", x)
    small = np.abs(x) < 1e3
    xd = x[small].astype(np.float64)
    gwant = xd * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in xd]))
    assert (np.abs(g[small] - gwant) <= 4e-7 * np.abs(xd) + 1e-7 * np.abs(gwant) + 1.5e-45).all()
    np.testing.assert_allclose(g, ref.OPS["gelu"](x), rtol=2e-6, atol=4e-7 * np.abs(x[np.isfinite(x)]).max())
