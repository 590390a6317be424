"""IR type names, and how Python annotations and values map onto them."""
from __future__ import annotations

import typing
from typing import Any

# Types a value can have in the IR besides object types (KVCache, ...).
VALUE_TYPES = ("Tensor", "int", "float", "bool", "str", "ints", "Any")
# Registry output strings that are not types themselves.
NON_TYPES = ("same", "None")


class Tensor:
    """Annotation marker for tensor parameters: `def f(x: Tensor, n: int) -> Tensor`."""

    def __init__(self):
        raise TypeError("tensorvm.Tensor is an annotation marker; tensors are numpy arrays or traced values")


class ObjectType(str):
    """An object type name used as an annotation, e.g. `cache: ObjectType("KVCache")` (a plain "KVCache" works too)."""


_BY_CLASS = {int: "int", float: "float", bool: "bool", str: "str", Tensor: "Tensor", list: "ints"}


def type_name(annotation: Any, where: str = "") -> str:
    """The IR type named by a Python annotation (a class, typing.Any, or a string)."""
    if isinstance(annotation, str):
        name = annotation.strip().strip("'\"")
        if name.startswith("tensorvm."):
            name = name.rsplit(".", 1)[1]
        if not name.isidentifier():
            raise TypeError(f"{where}annotation {annotation!r} is not an IR type name")
        return name
    if annotation is Any or annotation is typing.Any:
        return "Any"
    if annotation in _BY_CLASS:
        return _BY_CLASS[annotation]
    try:
        import numpy as np

        if annotation is np.ndarray:
            return "Tensor"
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"{where}annotation {annotation!r} is not an IR type "
                    f"(use Tensor, int, float, bool, str, Any or an object type name such as \"KVCache\")")


def return_type_names(annotation: Any, where: str = "") -> tuple[list[str], bool]:
    """(types, is_tuple) for a return annotation; None means no values."""
    if annotation is None or annotation is type(None) or annotation == "None":
        return [], False
    if isinstance(annotation, str) and annotation.strip().startswith("tuple["):
        inner = annotation.strip()[len("tuple["):-1]
        return [type_name(t, where) for t in inner.split(",") if t.strip()], True
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return [type_name(t, where) for t in typing.get_args(annotation)], True
    return [type_name(annotation, where)], False


def literal_type(value: Any) -> str:
    """IR type of a Python literal."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "ints"
    if value is None:
        return "Any"
    raise TypeError(f"no IR literal for a Python {type(value).__name__}")


def compatible(expected: str, got: str) -> bool:
    """Whether a value of type `got` may stand where `expected` is declared."""
    return expected == got or "Any" in (expected, got) or (expected == "float" and got == "int")


def infer_any(rule: str, arg_types: list[str]) -> str:
    """Result type of an op declared "-> Any", from its result rule (the registry's
    OpDef::result) and the types of its arguments.

    Tensor in, Tensor out; otherwise the scalar type: "bool" rules (comparisons) give
    bool, "float" (true division) gives float, anything with a float is float, ints
    (and bools) stay int.
    """
    if rule == "scalar":
        return "Any"  # a scalar whose kind follows the tensor's dtype, unknown while tracing
    if rule == "first_arg":
        return arg_types[0] if arg_types else "Any"
    if "Tensor" in arg_types:
        return "Tensor"
    scalars = [t for t in arg_types if t in ("int", "float", "bool")]
    if not scalars:
        return "Any"
    if "Any" in arg_types:
        return "Any"
    if rule == "bool":
        return "bool"
    if rule == "float" or "float" in scalars:
        return "float"
    return "int"
