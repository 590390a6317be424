"""Replay: run a program's IR as the Python it is, with the numpy reference ops.

The text is checked against the grammar first (ir_check), then the checked AST is
compiled and executed in a namespace holding only the ops, `param`, the control
flow builtins of reference/runtime.py, inf/nan and type markers; Python's own
builtins are not reachable. Each IR line is then one line of Python: set a
breakpoint or print anywhere to debug.
"""
from __future__ import annotations

import __future__
from pathlib import Path
from typing import Any, Mapping, Optional

from . import registry, weights_io
from .export import PROGRAM_FILE, WEIGHTS_FILE, coerce_inputs, read_meta, read_regular_file


class TypeMarker:
    """Stands for an IR type name in the replay namespace (annotations are not evaluated)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


class _Param:
    """`param(name, index=None)` over a weights mapping."""

    def __init__(self, weights: Mapping[str, Any]):
        self.weights = weights

    def __call__(self, name, index=None):
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"param({name!r}, {index!r}): the index must be an int")
            name = name.replace("{}", str(index))
        try:
            return self.weights[name]
        except KeyError:
            raise KeyError(f"param: no weight named {name!r} in the weights file") from None


def namespace(weights: Mapping[str, Any], used_ops) -> dict:
    from ..reference import OPS
    from ..reference.runtime import BUILTINS
    from .types import VALUE_TYPES

    ns: dict[str, Any] = {"__builtins__": {}}
    specs = registry.ops()
    for name in used_ops:
        fn = OPS.get(name)
        if fn is None and name in specs:
            fn = specs[name].reference
        if fn is None:
            raise NotImplementedError(f"op '{name}' has no reference implementation in tensorvm.reference; "
                                      "the program cannot be replayed")
        ns[name] = fn
    ns.update(BUILTINS)
    ns["param"] = _Param(weights)
    ns["inf"] = float("inf")
    ns["nan"] = float("nan")
    for t in set(VALUE_TYPES) | registry.object_types():
        ns[t] = TypeMarker(t)
    return ns


class Replayer:
    """A checked, compiled program ready to replay; weights are read once (memory-mapped)."""

    def __init__(self, path=None, *, text: Optional[str] = None, weights: Optional[Mapping[str, Any]] = None,
                 filename: Optional[str] = None):
        from .ir_check import _Checker, _decode

        self.path = Path(path) if path is not None else None
        if text is None:
            if self.path is None:
                raise TypeError("Replayer needs a program directory or text")
            read_meta(self.path)
            text = read_regular_file(self.path / PROGRAM_FILE).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        filename = filename or (str(self.path / PROGRAM_FILE) if self.path else "program.py")
        checker = _Checker(_decode(text, filename), filename, None, None)
        tree, self.module = checker.run()
        if weights is None:
            weights = weights_io.read(self.path / WEIGHTS_FILE)[0] if self.path is not None else {}
        used = {s.callee for f in self.module.functions for s in f.body if hasattr(s, "callee")}
        used -= {"param", "while_loop", "cond", "emit"} | set(self.module.function_names)
        self.namespace = namespace(weights, sorted(used))
        # Annotations stay unevaluated strings: nothing but the checked calls runs.
        code = compile(tree, filename, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
        exec(code, self.namespace)

    @property
    def functions(self) -> list[str]:
        return self.module.function_names

    def run(self, function: str, *inputs: Any, on_emit=None) -> Any:
        """`on_emit(channel, value)` receives each `emit` of the run, as the VM's
        callback does; returning False answers "stop"."""
        from ..reference.runtime import emitter

        fn = self.module.function(function)
        args = coerce_inputs(fn, inputs)
        self.namespace["emit"] = emitter(on_emit)
        try:
            return self.namespace[function](*args)
        finally:
            self.namespace["emit"] = emitter()


def replay(path, function: str, *inputs: Any, on_emit=None) -> Any:
    """Runs `function` of the program directory `path` with the reference ops; returns its result."""
    return Replayer(path).run(function, *inputs, on_emit=on_emit)
