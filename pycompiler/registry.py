"""The op registry as Python sees it: one OpSpec per op of `_C.registry()`.

Everything on the Python side that needs to know the instruction set (the op
front-end, the IR checker, replay, the CLI, docgen) reads it from here, so the C++
registry stays the single source of truth.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from .. import _C
from .types import NON_TYPES, VALUE_TYPES

@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # "Tensor", "Tensor?", "Tensor|scalar", "int", "ints?", "Object", "Any", ...
    has_default: bool = False
    default: Any = None
    variadic: bool = False


@dataclass(frozen=True)
class OpSpec:
    name: str
    group: str
    params: tuple[ParamSpec, ...]
    outputs: tuple[str, ...]
    doc: str
    signature_text: str
    # Set for stand-ins registered by tests while an op's C++ kernel is missing, and for
    # custom ops (tensorvm.register_op), whose reference serves replay.
    reference: Optional[Callable[..., Any]] = field(default=None, compare=False)
    custom: bool = False  # registered by the app: a C++ kernel exists, `reference` replays it
    builtin: bool = True  # one of the runtime's own ops (not registered by an app at run time)
    # How the tracer types an "Any" output (ops::ResultRule: "declared", "promote", "bool",
    # "float", "scalar", "first_arg"); a stand-in's Any output is typed as arithmetic.
    result: str = "promote"
    raises: bool = False  # the op exists to fail on bad input: passes keep it even unused

    @property
    def is_stand_in(self) -> bool:
        return self.reference is not None and not self.custom

    def python_signature(self) -> inspect.Signature:
        return _python_signature(self)


def _spec_from_dict(d: dict) -> OpSpec:
    params = tuple(
        ParamSpec(p["name"], p["kind"], bool(p["has_default"]), p["default"], bool(p["variadic"])) for p in d["params"]
    )
    return OpSpec(d["name"], d["group"], params, tuple(d["outputs"]), d["doc"], d["signature"],
                  builtin=bool(d.get("builtin", True)), result=d["result"], raises=bool(d["raises"]))


_real: Optional[dict[str, OpSpec]] = None
_stand_ins: dict[str, OpSpec] = {}
_references: dict[str, Callable[..., Any]] = {}  # custom ops' reference implementations


def _load_real() -> dict[str, OpSpec]:
    global _real
    if _real is None:
        real = {}
        for d in _C.registry():
            spec = _spec_from_dict(d)
            if spec.name in _references:
                spec = dataclasses.replace(spec, reference=_references[spec.name], custom=True)
            real[spec.name] = spec
        _real = real
    return _real


def add_custom_reference(name: str, reference: Callable[..., Any]) -> None:
    """Attaches the reference implementation of a custom op and rereads the C++ registry."""
    global _real
    _references[name] = reference
    _real = None


def ops() -> dict[str, OpSpec]:
    """Every op by name: the C++ registry, plus any test stand-ins for ops it lacks."""
    real = _load_real()
    if not _stand_ins:
        return real
    merged = dict(real)
    for name, spec in _stand_ins.items():
        merged.setdefault(name, spec)
    return merged


def real_ops() -> dict[str, OpSpec]:
    return _load_real()


def find(name: str) -> Optional[OpSpec]:
    return ops().get(name)


def object_types() -> set[str]:
    """Object type names (KVCache, ...): every op output that is not a value type."""
    out = set()
    for spec in ops().values():
        out.update(t for t in spec.outputs if t not in VALUE_TYPES and t not in NON_TYPES)
    return out


@contextlib.contextmanager
def stand_ins(specs: list[OpSpec]) -> Iterator[None]:
    """Temporarily adds ops that the C++ registry does not have (yet).

    Used by tests of the tracer and checker so they can run before every kernel
    lands; a real op of the same name always wins.
    """
    added = []
    for spec in specs:
        if spec.name not in _stand_ins:
            _stand_ins[spec.name] = spec
            added.append(spec.name)
    try:
        yield
    finally:
        for name in added:
            _stand_ins.pop(name, None)


def make_stand_in(signature: str, reference: Callable[..., Any], group: str = "stand-in") -> OpSpec:
    """An OpSpec from a compact signature such as "add(a: Tensor|scalar, b: Tensor|scalar) -> Any".

    Defaults are Python literals ("eps: float = 1e-05"); several outputs as "-> (Tensor, int)".
    """
    head, _, outs = signature.partition("->")
    name, _, rest = head.strip().partition("(")
    body = rest.rstrip().rstrip(")")
    params = []
    for piece in _split_top(body):
        piece = piece.strip()
        if not piece:
            continue
        variadic = piece.startswith("*")
        piece = piece.lstrip("*")
        decl, eq, dflt = piece.partition("=")
        pname, _, kind = decl.partition(":")
        has_default = bool(eq)
        default = eval(dflt.strip(), {"__builtins__": {}}, {}) if has_default else None  # test-only literal
        params.append(ParamSpec(pname.strip(), kind.strip() or "Any", has_default, default, variadic))
    outs = outs.strip()
    outputs = tuple(o.strip() for o in outs.strip("()").split(",")) if outs.startswith("(") else (outs,)
    return OpSpec(name.strip(), group, tuple(params), outputs, f"Stand-in for {name.strip()}.", signature.strip(), reference)


def _split_top(text: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _python_signature(spec: OpSpec) -> inspect.Signature:
    params = []
    seen_variadic = False
    for p in spec.params:
        if p.variadic:
            kind = inspect.Parameter.VAR_POSITIONAL
            seen_variadic = True
        elif seen_variadic:
            kind = inspect.Parameter.KEYWORD_ONLY
        else:
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = p.default if p.has_default and not p.variadic else inspect.Parameter.empty
        params.append(inspect.Parameter(p.name, kind, default=default, annotation=p.kind))
    ret = spec.outputs[0] if len(spec.outputs) == 1 else f"tuple[{', '.join(spec.outputs)}]"
    try:
        return inspect.Signature(params, return_annotation=ret)
    except ValueError:
        # A required param after a defaulted one is legal in the registry (binding is
        # by slot there) but not in Python; such an op takes anything and the C++
        # binder (or the tracer's own check) reports mistakes.
        return inspect.Signature(
            [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
             inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)],
            return_annotation=ret,
        )
