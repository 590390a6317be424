"""Helpers the op test files share: an op must fail the same way in C++ and in the
reference, and random inputs of a dtype."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference as ref
from tensorvm._C import call_op

F32, BOOL = np.float32, np.bool_


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
