"""Helpers the op test files share: an op's signature, results and errors must be
the same in C++ and in the reference; random inputs of a dtype."""
import inspect
import math

import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import Program, Session, call_op, registry

F32, BOOL = np.float32, np.bool_


def check_signature(name, group):
    """Op `name` is in `group`, has a doc, and takes the reference's parameters: the same
    names, defaults and variadic one. Returns its registry entry."""
    op = next(o for o in registry() if o["name"] == name)
    assert op["group"] == group and op["doc"], name
    params = list(inspect.signature(ref.OPS[name]).parameters.values())
    assert [p["name"] for p in op["params"]] == [q.name for q in params], name
    for p, q in zip(op["params"], params):
        assert p["variadic"] == (q.kind is inspect.Parameter.VAR_POSITIONAL), (name, p["name"])
        if p["has_default"]:
            assert q.default == p["default"], (name, p["name"])
        else:
            assert q.default is inspect.Parameter.empty, (name, p["name"])
    return op


def compare(got, want, rtol=1e-5, atol=1e-6):
    """A C++ result against the reference's: the same structure, types, dtypes and shapes;
    integers and bools equal, floats within rtol/atol (0, 0: equal), NaN where NaN is."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w, rtol, atol)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), type(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert type(got) is type(want), (got, want)
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == want or (isinstance(want, float) and math.isclose(got, want, rel_tol=1e-12)), (got, want)


def check(name, *args, rtol=1e-5, atol=1e-6, **kwargs):
    """Runs op `name` in C++ and in the reference and compares the results; returns C++'s."""
    got = call_op(name, *args, **kwargs)
    want = ref.OPS[name](*args, **kwargs)
    compare(got, want, rtol, atol)
    return got


def check_exact(name, *args, **kwargs):
    """check() without tolerance, for ops that make or move data without arithmetic."""
    return check(name, *args, rtol=0, atol=0, **kwargs)


def check_error(name, *args, match="", ref_match=None, **kwargs):
    """Op `name` fails in C++ and in the reference, each message starting "name: " and
    holding `match` (a regex); `ref_match` where the reference words it otherwise."""
    with pytest.raises(tensorvm.VMError, match=rf"^{name}: .*{match}"):
        call_op(name, *args, **kwargs)
    with pytest.raises(ref.OpError, match=rf"^{name}: .*{match if ref_match is None else ref_match}"):
        ref.OPS[name](*args, **kwargs)


def rand(rng, shape, dtype=F32, lo=-5, hi=5):
    if dtype == F32:
        return np.asarray(rng.uniform(lo, hi, shape)).astype(F32)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(lo, hi, shape)).astype(dtype)


def arr(rng, *shape, dtype=F32):
    """Random values of `dtype`: normal floats, ints in [-1000, 1000), bools at 1/2."""
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == F32:
        return np.asarray(rng.standard_normal(shape), F32)
    return np.asarray(rng.integers(-1000, 1000, size=shape), dtype)


def one_op_session(op, n_args, num_threads=1):
    """A VM session over `f(a0, ..., a{n_args-1}) -> Tensor`, whose one instruction is `op(a0, ...)`."""
    names = [f"a{i}" for i in range(n_args)]
    text = (f"# tensorvm ir 1\ndef f({', '.join(n + ': Tensor' for n in names)}) -> Tensor:\n"
            f"    y = {op}({', '.join(names)})\n    return y\n")
    return Session(Program.from_text(text, ""), num_threads)


def vm_call(op, *tensors, num_threads=1):
    """`op(*tensors)` run by the interpreter, on `num_threads` threads, rather than by call_op."""
    return np.asarray(one_op_session(op, len(tensors), num_threads).run("f", list(tensors))[0])
