"""Shared helpers of the pycompiler tests: skips for parts still being built, and
fallback reference ops so replay can be tested before every reference op lands."""
import operator
from pathlib import Path

import numpy as np
import pytest

from tensorvm import _C, reference
from tensorvm.pycompiler import registry

REPO = Path(__file__).resolve().parents[2]

HAS_VM = hasattr(_C, "Program") and hasattr(_C, "Session")
HAS_PARSE_AND_PRINT = hasattr(_C, "parse_and_print")
requires_vm = pytest.mark.skipif(not HAS_VM, reason="needs the VM bindings (_C.Program, _C.Session)")
requires_parse_and_print = pytest.mark.skipif(not HAS_PARSE_AND_PRINT, reason="needs _C.parse_and_print")


def missing_ops(*names):
    real = registry.real_ops()
    return [n for n in names if n not in real]


def requires_ops(*names):
    missing = missing_ops(*names)
    return pytest.mark.skipif(bool(missing), reason=f"ops not in the registry yet: {', '.join(missing)}")


def _binary(fn):
    def op(x, y):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            r = fn(np.asarray(x) if not isinstance(x, np.ndarray) else x, y)
            return np.asarray(r)
        return fn(x, y)
    return op


# Plain semantics for the scalar/elementwise ops the pycompiler tests use; only
# installed for names tensorvm.reference does not define yet.
FALLBACK_REFERENCE = {
    "add": _binary(operator.add),
    "sub": _binary(operator.sub),
    "mul": _binary(operator.mul),
    "div": _binary(operator.truediv),
    "lt": _binary(operator.lt),
    "le": _binary(operator.le),
    "gt": _binary(operator.gt),
    "ge": _binary(operator.ge),
    "eq": _binary(operator.eq),
    "ne": _binary(operator.ne),
    "logical_and": _binary(lambda a, b: np.logical_and(a, b) if isinstance(a, np.ndarray) else bool(a) and bool(b)),
    "neg": lambda x: -x,
    "silu": lambda x: (x / (1 + np.exp(-x))).astype(np.float32),
}


@pytest.fixture
def reference_fallbacks():
    added = [n for n in FALLBACK_REFERENCE if n not in reference.OPS]
    for n in added:
        reference.OPS[n] = FALLBACK_REFERENCE[n]
    try:
        yield added
    finally:
        for n in added:
            reference.OPS.pop(n, None)


def tensorvm_run_tool() -> str:
    """The tensorvm-run binary of this package; skip without one (fail under CI)."""
    import os

    from tensorvm.pycompiler.locations import NotInstalledError, get_tensorvm_run

    try:
        return get_tensorvm_run()
    except NotInstalledError as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
