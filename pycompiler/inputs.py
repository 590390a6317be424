"""Host values in, as a function of a program declares them: shared by the C++ VM
(program.py) and the Python replay (replay.py), so both accept the same inputs."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import ir
from .modes import as_array


def _coerce(value: Any, type_: str, what: str) -> Any:
    """A host input in the form the declared parameter type wants (numpy scalars become Python ones)."""
    def scalar():
        if isinstance(value, np.ndarray):
            if value.ndim != 0:
                raise TypeError(f"{what} is declared {type_} but got an array of shape {list(value.shape)}")
            return value.item()
        if isinstance(value, np.generic):
            return value.item()
        return value

    if type_ == "int":
        v = scalar()
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} is declared int, got {type(v).__name__} {v!r}")
        return v
    if type_ == "float":
        v = scalar()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{what} is declared float, got {type(v).__name__} {v!r}")
        return float(v)
    if type_ == "bool":
        v = scalar()
        if not isinstance(v, bool):
            raise TypeError(f"{what} is declared bool, got {type(v).__name__} {v!r}")
        return v
    if type_ == "str":
        v = scalar()
        if not isinstance(v, str):
            raise TypeError(f"{what} is declared str, got {type(v).__name__} {v!r}")
        return v
    if type_ == "Tensor":
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, (list, tuple, int, float, bool, np.generic)):
            return np.asarray(value)
        if hasattr(value, "__array__") or hasattr(value, "detach"):
            return as_array(value)
        raise TypeError(f"{what} is declared Tensor, got {type(value).__name__}")
    return value


def coerce_inputs(fn: ir.Function, inputs: tuple) -> list:
    # trailing options (type Any) left out are None, as on the command line: a function
    # that gains an option (Whisper's transcribe, return_timestamps) keeps its callers
    if len(inputs) < len(fn.params) and all(p.type == "Any" for p in fn.params[len(inputs):]):
        inputs = (*inputs, *[None] * (len(fn.params) - len(inputs)))
    if len(inputs) != len(fn.params):
        sig = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
        raise TypeError(f"{fn.name}({sig}) takes {len(fn.params)} inputs, got {len(inputs)}")
    return [_coerce(v, p.type, f"input '{p.name}' of {fn.name}") for v, p in zip(inputs, fn.params)]


def shape_result(fn: ir.Function, outs: list) -> Any:
    """What the replay of `fn` returns: None, the value, or a tuple (k > 1 values).

    A one-value function returns its value bare even if declared "-> tuple[T]",
    because its Python `return a` does.
    """
    outs = list(outs)
    if len(fn.return_types) > 1:
        return tuple(outs)
    if not fn.return_types:
        return None
    if len(outs) != 1:
        raise RuntimeError(f"{fn.name} returned {len(outs)} values, expected 1")
    return outs[0]
