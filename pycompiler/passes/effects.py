"""Which statements a pass may remove, merge or evaluate: the pure ones.

A statement is pure when running it twice, or not at all, changes nothing but its own
results. Not pure: ops that take an object (a KV cache or generator is changed in
place, or read while it changes), ops that return one (each call makes a new object),
ops whose job is to fail (the registry's `raises`: `check`, `option_index`), `emit`
(the host sees it), and calls, loops and branches of functions holding any of those.
"""
from __future__ import annotations

from .. import ir, registry

VALUE_OUTPUTS = frozenset({"Tensor", "int", "float", "bool", "str", "ints", "Any", "None"})


def _pure_op(spec) -> bool:
    if spec.raises:  # removing one unused would hide the error it exists to raise
        return False
    if any(p.kind == "Object" for p in spec.params):
        return False
    return all(o in VALUE_OUTPUTS for o in spec.outputs)


def pure_ops() -> frozenset:
    return frozenset(name for name, spec in registry.ops().items() if _pure_op(spec))


def called_functions(s: ir.Assign, functions: set) -> list[str]:
    """The program functions a statement runs: its callee, or the function-name arguments of while_loop/cond."""
    if s.callee in functions:
        return [s.callee]
    if s.callee in ("while_loop", "cond"):
        return [a.id for a in s.args if isinstance(a, ir.Name) and a.id in functions]
    return []


def pure_functions(module: ir.Module, ops: frozenset) -> set:
    """The functions all of whose statements are pure (a fixpoint over calls, so recursion stays impure)."""
    names = set(module.function_names)
    impure: set = set()
    changed = True
    while changed:
        changed = False
        for f in module.functions:
            if f.name in impure:
                continue
            for s in f.body:
                if isinstance(s, ir.Assign) and not _pure_stmt(s, ops, names, impure, f.name):
                    impure.add(f.name)
                    changed = True
                    break
    return names - impure


def _pure_stmt(s: ir.Assign, ops: frozenset, functions: set, impure: set, self_name: str) -> bool:
    if s.callee == "param":
        return True
    if s.callee in functions or s.callee in ("while_loop", "cond"):
        called = called_functions(s, functions)
        return all(c not in impure and c != self_name for c in called)
    return s.callee in ops


class Effects:
    """Purity of the statements of one module."""

    def __init__(self, module: ir.Module):
        self.ops = pure_ops()
        self.functions = set(module.function_names)
        self.pure_functions = pure_functions(module, self.ops)

    def pure(self, s) -> bool:
        if not isinstance(s, ir.Assign):
            return False
        if s.callee == "param":
            return True
        if s.callee in self.functions or s.callee in ("while_loop", "cond"):
            return all(c in self.pure_functions for c in called_functions(s, self.functions))
        return s.callee in self.ops
