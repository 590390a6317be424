"""Replay: run a program's IR as the Python it is, with the numpy reference ops.

The text is checked against the grammar first (ir_check), then the checked AST is
compiled and executed in a namespace holding only the ops, `param`, the control
flow builtins of reference/runtime.py, inf/nan and type markers; Python's own
builtins are not reachable. Each IR line is then one line of Python: set a
breakpoint or print anywhere to debug. `check(text)` does the checking alone.
"""
from __future__ import annotations

import __future__
import ast
from pathlib import Path
from typing import Any, Mapping, Optional

from . import ir, registry, weights_io
from .inputs import coerce_inputs
from .ir_check import called_ops, check_and_parse
from .program_dir import PROGRAM_FILE, WEIGHTS_FILE, read_meta, read_program_text
from .types import VALUE_TYPES


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


def reference_ops(module: ir.Module) -> dict[str, Any]:
    """The reference implementation of each op `module` calls; NotImplementedError names one that has none."""
    from ..reference import OPS

    used = called_ops(module)
    specs = registry.ops()
    found = {}
    for name in sorted(used):
        fn = OPS.get(name)
        if fn is None and name in specs:
            fn = specs[name].reference
        if fn is None:
            raise NotImplementedError(f"op '{name}' has no reference implementation in tensorvm.reference; "
                                      "the program cannot be replayed")
        found[name] = fn
    return found


def check(text, *, filename: str = "program.py") -> ir.Module:
    """Checks program text (str or UTF-8 bytes) as replay would run it; returns it as an ir.Module.

    The text must pass ir_check over the registry's ops and object types
    (IRCheckError names the line), and every op it calls must have a reference
    implementation (NotImplementedError names the op). Nothing is executed.
    """
    module = check_and_parse(text, filename=filename).module
    reference_ops(module)
    return module


def namespace(weights: Mapping[str, Any], ops: Mapping[str, Any]) -> dict:
    from ..reference.runtime import BUILTINS

    ns: dict[str, Any] = {"__builtins__": {}}
    ns.update(ops)
    ns.update(BUILTINS)
    ns["param"] = _Param(weights)
    ns["inf"] = float("inf")
    ns["nan"] = float("nan")
    for t in set(VALUE_TYPES) | registry.object_types():
        ns[t] = TypeMarker(t)
    return ns


WATCH = "__watch__"  # a name no checked program can use (ir_check refuses dunders)


def _watched(tree: ast.Module) -> ast.Module:
    """`tree` with `__watch__(function, line, op, names, values)` after every assignment
    but `param`: the replay's side of the VM's per-instruction hook (tensorvm diff)."""
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        body = []
        for stmt in fn.body:
            body.append(stmt)
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Name)) or stmt.value.func.id == "param":
                continue
            target = stmt.targets[0]
            names = [t.id for t in target.elts] if isinstance(target, ast.Tuple) else [target.id]
            call = ast.Expr(ast.Call(ast.Name(WATCH, ast.Load()), [
                ast.Constant(fn.name), ast.Constant(stmt.lineno), ast.Constant(stmt.value.func.id),
                ast.Tuple([ast.Constant(n) for n in names], ast.Load()),
                ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load())], []))
            body.append(ast.copy_location(call, stmt))
        fn.body = body
    return ast.fix_missing_locations(tree)


class Replayer:
    """A checked, compiled program ready to replay; weights are read once (memory-mapped).

    With `watch`, watch(function, line, op, names, values) is called after every
    instruction but param, as the VM's hooks see them (tensorvm diff)."""

    def __init__(self, path=None, *, text: Optional[str] = None, weights: Optional[Mapping[str, Any]] = None,
                 filename: Optional[str] = None, watch=None):
        self.path = Path(path) if path is not None else None
        if text is None:
            if self.path is None:
                raise TypeError("Replayer needs a program directory or text")
            read_meta(self.path)
            text = read_program_text(self.path)
        filename = filename or (str(self.path / PROGRAM_FILE) if self.path else "program.py")
        tree, self.module = check_and_parse(text, filename=filename)
        ops = reference_ops(self.module)
        if weights is None:
            weights = weights_io.read(self.path / WEIGHTS_FILE)[0] if self.path is not None else {}
        self.namespace = namespace(weights, ops)
        if watch is not None:
            tree = _watched(tree)  # after the check: the check never sees the hook
            self.namespace[WATCH] = watch
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
