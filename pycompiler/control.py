"""Structured control flow for model code: while_loop and cond; and emit, which
hands a value to the host.

Eager: a Python loop or if (and emit answers True: no host listens). Tracing: the
bodies become IR functions whose parameters have the types of the values passed
in, and one while_loop/cond instruction calls them, so loops stay loops in the
program; emit records one emit instruction.
"""
from __future__ import annotations

from typing import Any, Callable

from . import registry, tracing
from .tracing import TracingError, Var


def _truth(value: Any, what: str) -> bool:
    """A loop or branch condition: a bool, or a one-element bool tensor (as in the VM)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and str(dtype) == "bool" and getattr(value, "size", 0) == 1:
        return bool(value.reshape(()))
    raise TypeError(f"{what} must be a bool or a one-element bool tensor, got {type(value).__name__}"
                    + (f" {dtype}{list(getattr(value, 'shape', []))}" if dtype is not None else ""))


def _as_tuple(result: Any, n: int, what: str) -> tuple:
    if isinstance(result, tuple):
        out = result
    elif n == 1:
        out = (result,)
    else:
        raise TypeError(f"{what} must return {n} values (a tuple), got {type(result).__name__}")
    if len(out) != n:
        raise TypeError(f"{what} must return as many values as it takes ({n}), got {len(out)}")
    return out


def while_loop(cond_fn: Callable, body_fn: Callable, *carried: Any) -> tuple:
    """While cond_fn(*carried) is true: carried = body_fn(*carried). Returns the final carried values as a tuple."""
    if not carried:
        raise TypeError("while_loop needs at least one carried value")
    if tracing.active() or any(isinstance(c, Var) for c in carried):
        return _trace_while(cond_fn, body_fn, carried)
    values = tuple(carried)
    while _truth(cond_fn(*values), "while_loop condition"):
        values = _as_tuple(body_fn(*values), len(values), "while_loop body")
    return values


def cond(pred: Any, then_fn: Callable, else_fn: Callable, *args: Any) -> Any:
    """then_fn(*args) if pred else else_fn(*args)."""
    if isinstance(pred, Var):
        return _trace_cond(pred, then_fn, else_fn, args)
    # A concrete predicate picks the branch now; under tracing that inlines it.
    return then_fn(*args) if _truth(pred, "cond predicate") else else_fn(*args)


def emit(channel: str, value: Any) -> Any:
    """Hands `value` to the host on `channel` (docs/ir.md, emit); returns a bool, False
    when the host asks the program to stop. Eager, no host listens: True."""
    if not isinstance(channel, str):
        raise TypeError(f"emit: the channel must be a str, got {type(channel).__name__}")
    if not (tracing.active() or isinstance(value, Var)):
        return True
    trace = tracing.require_trace((value,))
    v = tracing.to_arg(trace, value, "emit value")
    if isinstance(v, tracing.FuncRef):
        raise TracingError("emit: a function cannot be emitted")
    return tracing.emit(trace, "emit", [channel, v], [], ["bool"], "go")[0]


# ---------------------------------------------------------------- tracing


def materialize(trace, value: Any) -> Var:
    """An instruction that yields a Python literal as a value, so it can be loop-carried."""
    t = tracing.arg_type(value)
    for name in ("identity", "copy", "scalar"):
        spec = registry.find(name)
        if spec is not None and len(spec.params) >= 1 and spec.params[0].kind in ("Any", "Tensor|scalar"):
            return tracing.emit(trace, name, [value], [], [t], name)[0]
    if t in ("int", "float") and registry.find("add"):
        zero = 0 if t == "int" else 0.0
        return tracing.emit(trace, "add", [value, zero], [], [t], "add")[0]
    if t == "bool":
        for name in ("logical_and", "eq"):
            if registry.find(name):
                return tracing.emit(trace, name, [value, True], [], ["bool"], name)[0]
    raise TracingError(f"cannot carry the literal {value!r} through a loop: pass a traced value instead")


def _trace_while(cond_fn, body_fn, carried) -> tuple:
    trace = tracing.require_trace(carried)
    values = []
    for i, c in enumerate(carried):
        a = tracing.to_arg(trace, c, f"while_loop carried value {i}")
        if isinstance(a, tracing.FuncRef):
            raise TracingError("while_loop: a function cannot be carried")
        if isinstance(a, tracing.ListArg) or a is None or isinstance(a, str):
            raise TracingError(f"while_loop carried value {i}: {c!r} cannot be carried (ints, floats, bools and traced values can)")
        values.append(a if isinstance(a, Var) else materialize(trace, a))
    types = [v.type for v in values]
    builder = trace.builder
    ct = builder.trace_helper(cond_fn, types, "while_cond")
    bt = builder.trace_helper(body_fn, types, "while_body")
    if len(ct.return_types) != 1 or ct.return_types[0] not in ("bool", "Tensor", "Any"):
        raise TracingError(f"while_loop condition {ct.name}() must return one bool (or one-element bool tensor), "
                           f"got ({', '.join(ct.return_types)})")
    tracing.check_types(f"while_loop body {bt.name}() returns", types, bt.return_types)
    outs = tracing.emit(trace, "while_loop", [tracing.FuncRef(ct), tracing.FuncRef(bt)] + values, [], types,
                        "while_loop", unpack=len(types) == 1)
    return tuple(outs)


def _trace_cond(pred, then_fn, else_fn, args) -> Any:
    trace = tracing.require_trace((pred,) + tuple(args))
    p = tracing.to_arg(trace, pred, "cond predicate")
    if tracing.arg_type(p) not in ("bool", "Tensor", "Any"):
        raise TracingError(f"cond predicate must be a bool or a one-element bool tensor, got {tracing.arg_type(p)}")
    rec = []
    for i, a in enumerate(args):
        r = tracing.to_arg(trace, a, f"cond argument {i}")
        if isinstance(r, tracing.FuncRef):
            raise TracingError("cond: a function cannot be passed as an argument of the branches")
        rec.append(r)
    types = [tracing.arg_type(r) for r in rec]
    builder = trace.builder
    tt = builder.trace_helper(then_fn, types, "cond_then")
    et = builder.trace_helper(else_fn, types, "cond_else")
    if len(tt.return_types) != len(et.return_types):
        raise TracingError(f"cond branches {tt.name}() and {et.name}() return different numbers of values "
                           f"({len(tt.return_types)} and {len(et.return_types)})")
    if not tt.return_types:
        raise TracingError("cond branches must return at least one value")
    tracing.check_types(f"cond branch {et.name}() returns", tt.return_types, et.return_types)
    out_types = [a if a != "Any" else b for a, b in zip(tt.return_types, et.return_types)]
    outs = tracing.emit(trace, "cond", [p, tracing.FuncRef(tt), tracing.FuncRef(et)] + rec, [], out_types, "cond")
    return tuple(outs) if (tt.py_tuple or et.py_tuple) else outs[0]
