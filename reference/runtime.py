"""Replay-only builtins of the IR: while_loop, cond and emit, as plain Python.

`tensorvm.replay` binds the IR's `while_loop`, `cond` and `emit` to these. Their semantics
are those of docs/ir.md ("Semantics"); the conditions follow the VM: a bool or a
one-element bool tensor.
"""
import numpy as np


class RuntimeOpError(RuntimeError):
    pass


def truth(value, what="condition"):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray) and value.dtype == np.bool_ and value.size == 1:
        return bool(value.reshape(()))
    shown = f"array {value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
    raise RuntimeOpError(f"{what} must be a bool or a one-element bool tensor, got {shown}")


def _values(result, n, what):
    if n == 1 and not isinstance(result, tuple):
        result = (result,)
    if not isinstance(result, tuple) or len(result) != n:
        got = len(result) if isinstance(result, tuple) else 1
        raise RuntimeOpError(f"{what} must return {n} values, got {got}")
    return result


def while_loop(cond_fn, body_fn, *carried):
    """While cond_fn(*carried): carried = body_fn(*carried). Returns the carried values (a tuple)."""
    values = tuple(carried)
    while truth(cond_fn(*values), f"while_loop condition {cond_fn.__name__}"):
        values = _values(body_fn(*values), len(values), f"while_loop body {body_fn.__name__}")
    return values


def cond(pred, then_fn, else_fn, *args):
    """then_fn(*args) if pred else else_fn(*args)."""
    return then_fn(*args) if truth(pred, "cond predicate") else else_fn(*args)


def emitter(on_emit=None):
    """The IR's `emit(channel, value) -> bool` over a host callback on_emit(channel, value):
    False from the callback answers "stop", anything else "continue" (as in the VM);
    with no callback every emit answers True."""
    if on_emit is None:
        def emit(channel, value):
            return True
    else:
        def emit(channel, value):
            return on_emit(channel, value) is not False
    return emit


BUILTINS = {"while_loop": while_loop, "cond": cond, "emit": emitter()}
