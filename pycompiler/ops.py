"""The op front-end: `from tensorvm import ops as T`, then `T.linear(x, w, b)`, `T.param(name, layer)`.

One function per op of the C++ registry, generated at import with the op's
signature and doc. This module holds nothing else, because op names (`max`,
`sum`, `slice`, ...) shadow Python builtins in its namespace.
"""
import builtins as _builtins

from . import frontend as _frontend
from . import registry as _registry

param = _frontend.param


def _install(namespace):
    names = []
    for _name, _spec in _registry.real_ops().items():
        if _name != "param" and not _name.startswith("_"):
            namespace[_name] = _frontend.make_op_function(_spec)
            names.append(_name)
    return names


__all__ = ["param"] + _install(globals())


def __getattr__(name):
    # Ops added after import (test stand-ins for kernels that have not landed yet).
    spec = _registry.find(name)
    if spec is None:
        raise _builtins.AttributeError(f"tensorvm.ops has no op '{name}' (see `tensorvm ops` for the list)")
    return _frontend.make_op_function(spec)


def __dir__():
    return _builtins.sorted(_builtins.set(__all__) | _builtins.set(_registry.ops()))
