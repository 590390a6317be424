"""Constant folding: a pure op whose arguments are all literals and whose result is a
scalar (int, float, bool) is computed now, on the C++ kernel the VM would run, and
its name replaced by the value. Tensor results stay: the IR has no tensor literals."""
from __future__ import annotations

import math

from ... import _C
from .. import ir
from .effects import Effects


def _literal(e) -> bool:
    if isinstance(e, ir.Name):
        return False
    if isinstance(e, ir.IntList):
        return all(not isinstance(i, ir.Name) for i in e.items)
    return True


def _value(e):
    return list(e.items) if isinstance(e, ir.IntList) else e


def _substitute(e, values: dict):
    if isinstance(e, ir.Name) and e.id in values:
        return values[e.id]
    if isinstance(e, ir.IntList):
        items = tuple(values.get(i.id, i) if isinstance(i, ir.Name) else i for i in e.items)
        if all(isinstance(i, ir.Name) or (isinstance(i, int) and not isinstance(i, bool)) for i in items):
            return ir.IntList(items)
    return e


def fold(module: ir.Module) -> int:
    """Folds in place; returns how many statements were computed away."""
    effects = Effects(module)
    folded = 0
    for f in module.functions:
        values: dict = {}
        body = []
        for s in f.body:
            if isinstance(s, ir.Return):
                s.values = [_substitute(v, values) for v in s.values]
            else:
                s.args = [_substitute(a, values) for a in s.args]
                s.kwargs = [(k, _substitute(v, values)) for k, v in s.kwargs]
            if (isinstance(s, ir.Assign) and len(s.targets) == 1 and not s.unpack and s.callee in effects.ops
                    and all(_literal(a) for a in s.args) and all(_literal(v) for _, v in s.kwargs)):
                try:
                    out = _C.call_op(s.callee, *[_value(a) for a in s.args], **{k: _value(v) for k, v in s.kwargs})
                except Exception:  # noqa: BLE001 -- an op that fails now fails at run time too, with its line
                    out = None
                if type(out) in (int, bool) or (type(out) is float and math.isfinite(out)):
                    values[s.targets[0]] = out
                    folded += 1
                    continue
            body.append(s)
        f.body = body
    return folded

