"""What an op call does, decided per call: record it (tracing) or run it (eager).

Tracing wins when a function is being traced or any argument is a traced Var;
otherwise the current mode picks the C++ kernels or the numpy reference.
"""
from __future__ import annotations

from typing import Any

from . import modes, tracing
from .registry import OpSpec


def call(spec: OpSpec, args: tuple, kwargs: dict) -> Any:
    if tracing.active() or tracing.has_var(args, kwargs):
        return tracing.trace_op(spec, args, kwargs)
    return modes.eager_call(spec, args, kwargs)


def make_op_function(spec: OpSpec):
    def op(*args, **kwargs):
        return call(spec, args, kwargs)

    op.__name__ = op.__qualname__ = spec.name
    op.__module__ = "tensorvm.ops"
    op.__signature__ = spec.python_signature()
    op.__doc__ = f"{spec.signature_text}\n\n{spec.doc}" if spec.doc else spec.signature_text
    op.spec = spec
    return op


def param(name: str, index: Any = None):
    """The weight `name` (with `{}` replaced by `index`, e.g. a layer number).

    Tracing: records `param(name, index)` and remembers the weight for export.
    Eager: reads the weights bound with `tensorvm.weights(mapping)`.
    """
    if tracing.active() or isinstance(index, tracing.Var):
        return tracing.trace_param(name, index)
    if not isinstance(name, str):
        raise TypeError(f"param: the weight name must be a str, got {type(name).__name__}")
    if index is not None:
        if name.count("{}") != 1:
            raise ValueError(f"param({name!r}, ...): an index needs exactly one '{{}}' in the name")
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise TypeError(f"param({name!r}, {index!r}): the index must be an int")
        name = name.replace("{}", str(int(index)))
    elif "{}" in name:
        raise ValueError(f"param({name!r}): a name with '{{}}' needs an index")
    return modes.lookup_weight(name)
