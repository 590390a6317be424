"""Dead-code elimination: a pure statement none of whose results is used goes."""
from __future__ import annotations

from .. import ir
from .effects import Effects


def names_used(e) -> list[str]:
    if isinstance(e, ir.Name):
        return [e.id]
    if isinstance(e, ir.IntList):
        return [i.id for i in e.items if isinstance(i, ir.Name)]
    return []


def stmt_uses(s) -> list[str]:
    exprs = list(s.values) if isinstance(s, ir.Return) else list(s.args) + [v for _, v in s.kwargs]
    return [n for e in exprs for n in names_used(e)]


def dce(module: ir.Module) -> int:
    """Removes dead statements in place; returns how many."""
    effects = Effects(module)
    removed = 0
    for f in module.functions:
        live: set = set()
        keep = []
        for s in reversed(f.body):
            if isinstance(s, ir.Assign) and effects.pure(s) and not any(t in live for t in s.targets):
                removed += 1
                continue
            keep.append(s)
            live.update(stmt_uses(s))
        f.body = keep[::-1]
    return removed
