"""An app's own ops from Python: `tensorvm.register_op` and the `@tensorvm.custom_op` decorator.

The Python function is the op's reference implementation: replay and the "reference"
eager mode call it, and tracing records the op like any other (`T.my_op(...)`). When
no C++ kernel of that name is registered (vm::register_op from the app), the op is
also registered in the C++ registry with a kernel that calls the function through
pybind11, taking the GIL for each call: the VM can then run it, slowly. When the app
did register a C++ kernel, the signatures must agree and only the reference is added.
docs/runtime.md ("Embedding on a device") describes the C++ side.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _C
from . import registry


def _params(spec: registry.OpSpec) -> list[dict]:
    return [{"name": p.name, "kind": p.kind, "has_default": p.has_default, "default": p.default, "variadic": p.variadic}
            for p in spec.params]


def _same_signature(a: registry.OpSpec, b: registry.OpSpec) -> bool:
    return ([(p.name, p.kind, p.has_default, p.variadic) for p in a.params] ==
            [(p.name, p.kind, p.has_default, p.variadic) for p in b.params] and a.outputs == b.outputs)


def register_op(signature: str, reference: Callable[..., Any], *, doc: Optional[str] = None,
                replace: bool = False) -> Callable[..., Any]:
    """Registers the op `signature` ("name(x: Tensor, alpha: float = 1.0) -> Tensor";
    kinds as `tensorvm ops` prints them; several outputs as "-> (Tensor, int)") with
    `reference` as its Python implementation; returns the op function (`T.name`).

    A name already in the registry is an error unless `replace`, except a C++ op of
    the same signature that has no reference yet (the app's own kernel), which gains it.
    """
    if not callable(reference):
        raise TypeError(f"register_op: the reference of {signature!r} is not callable")
    spec = registry.make_stand_in(signature, reference, group="custom")
    if doc is None:
        doc = (reference.__doc__ or "").strip()
    existing = registry.real_ops().get(spec.name)
    if existing is not None and not replace:
        if existing.custom or existing.builtin:
            raise _C.VMError(f"register_op: op '{spec.name}' is already registered ({existing.signature_text}); "
                             "pass replace=True to replace it")
        if not _same_signature(existing, spec):
            raise _C.VMError(f"register_op: op '{spec.name}' is registered from C++ as {existing.signature_text}, "
                             f"which differs from {signature!r}")
    else:
        _C.register_op(spec.name, _params(spec), list(spec.outputs), doc, "custom", reference, replace)
    registry.add_custom_reference(spec.name, reference)
    from . import ops

    return getattr(ops, spec.name)


def custom_op(signature: str, *, doc: Optional[str] = None, replace: bool = False):
    """Decorator form of register_op: the decorated function is the reference implementation.

        @tensorvm.custom_op("scale_shift(x: Tensor, scale: float, shift: float = 0.0) -> Tensor")
        def scale_shift(x, scale, shift=0.0):
            return (x * scale + shift).astype(x.dtype)

    Returns the op function, so `scale_shift(x, 2.0)` traces or runs like `T.scale_shift`.
    """
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        return register_op(signature, fn, doc=doc, replace=replace)

    return wrap
