"""Eager execution: which kernels run an op outside tracing, and which weights `param` sees.

Both are context variables, so a `with` block affects only its own thread or task.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator, Mapping

MODES = ("cpp", "reference")
_mode: ContextVar[str] = ContextVar("tensorvm_mode", default="cpp")
_weights: ContextVar[tuple[Mapping[str, Any], ...]] = ContextVar("tensorvm_weights", default=())


@contextlib.contextmanager
def mode(name: str) -> Iterator[str]:
    """Runs eager op calls in the block with the C++ kernels ("cpp", the default) or the numpy reference ("reference")."""
    if name not in MODES:
        raise ValueError(f"unknown mode {name!r} (modes: {', '.join(MODES)})")
    token = _mode.set(name)
    try:
        yield name
    finally:
        _mode.reset(token)


def current_mode() -> str:
    return _mode.get()


@contextlib.contextmanager
def weights(mapping: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Binds the weights that eager `param(name)` calls read; inner bindings are searched first."""
    if not hasattr(mapping, "__getitem__") or not hasattr(mapping, "__contains__"):
        raise TypeError(f"weights() takes a mapping of names to arrays, not {type(mapping).__name__}")
    token = _weights.set(_weights.get() + (mapping,))
    try:
        yield mapping
    finally:
        _weights.reset(token)


def lookup_weight(name: str) -> Any:
    stack = _weights.get()
    for mapping in reversed(stack):
        if name in mapping:
            return as_array(mapping[name])
    if not stack:
        raise KeyError(f"param({name!r}) outside tracing needs weights: wrap the call in `with tensorvm.weights(mapping):`")
    raise KeyError(f"no weight named {name!r} in the bound weights")


def as_array(value: Any):
    """numpy view of a weight given as a numpy array or anything array-like (a torch tensor works without importing torch)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def eager_call(spec, args: tuple, kwargs: dict) -> Any:
    if _mode.get() == "cpp" and not spec.is_stand_in:
        from .. import _C

        return _C.call_op(spec.name, *args, **kwargs)
    fn = reference_op(spec)
    return fn(*args, **kwargs)


def reference_op(spec):
    from .. import reference

    fn = reference.OPS.get(spec.name)
    if fn is None:
        fn = spec.reference
    if fn is None:
        raise NotImplementedError(f"op '{spec.name}' has no reference implementation in tensorvm.reference")
    return fn
