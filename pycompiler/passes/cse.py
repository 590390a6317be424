"""Common-subexpression elimination: a pure statement computing what an earlier one
of the same function computed (same op or callee, same arguments) is dropped and its
names replaced by the earlier one's. Function bodies are straight lines, so the
earlier statement always runs first."""
from __future__ import annotations

from .. import ir
from .effects import Effects


def _key(e):
    # The type is part of the key: 1, 1.0 and True are equal in Python but not in the IR.
    if isinstance(e, ir.Name):
        return ("name", e.id)
    if isinstance(e, ir.IntList):
        return ("list", tuple(_key(i) for i in e.items))
    if isinstance(e, float):
        return ("float", repr(e))
    return (type(e).__name__, e)


def rename(e, names: dict):
    if isinstance(e, ir.Name):
        return ir.Name(names.get(e.id, e.id))
    if isinstance(e, ir.IntList):
        return ir.IntList(tuple(rename(i, names) for i in e.items))
    return e


def rename_stmt(s, names: dict) -> None:
    if not names:
        return
    if isinstance(s, ir.Return):
        s.values = [rename(v, names) for v in s.values]
    else:
        s.args = [rename(a, names) for a in s.args]
        s.kwargs = [(k, rename(v, names)) for k, v in s.kwargs]


def cse(module: ir.Module) -> int:
    """Merges repeated pure statements in place; returns how many were removed."""
    effects = Effects(module)
    removed = 0
    for f in module.functions:
        seen: dict = {}
        names: dict = {}
        body = []
        for s in f.body:
            rename_stmt(s, names)
            if isinstance(s, ir.Assign) and effects.pure(s):
                key = (s.callee, len(s.targets), s.unpack, tuple(_key(a) for a in s.args),
                       tuple((k, _key(v)) for k, v in s.kwargs))
                first = seen.get(key)
                if first is not None:
                    names.update(zip(s.targets, first.targets))
                    removed += 1
                    continue
                seen[key] = s
            body.append(s)
        f.body = body
    return removed
