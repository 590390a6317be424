"""The canonical printer (docs/ir.md, "Canonical printing").

Must produce the same bytes as ir/printer.cpp; the literal rules are stated at the
top of that file. Python's repr(float) is the reference the C++ side reproduces,
so floats need no work here; strings follow the C++ byte-level escaping, which for
valid UTF-8 text is the same character by character.
"""
from __future__ import annotations

import math

from .ir import Assign, Expr, Function, IntList, Module, Name, Return

HEADER = "# tensorvm ir 1"
INDENT = "    "

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_LIST_ITEMS = 8


class PrintError(ValueError):
    pass


def format_float(v: float) -> str:
    if math.isnan(v):
        return "nan"  # repr gives "nan" for every NaN, whatever its sign
    return repr(float(v))


def quote_string(s: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise PrintError(f"string {s!r} is not valid UTF-8 text (lone surrogate)") from e
    out = ['"']
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_int(v: int) -> str:
    if not INT64_MIN <= v <= INT64_MAX:
        raise PrintError(f"integer {v} does not fit in int64")
    return str(v)


def print_expr(e: Expr) -> str:
    # bool before int: True is an int in Python.
    if e is None:
        return "None"
    if isinstance(e, bool):
        return "True" if e else "False"
    if isinstance(e, int):
        return format_int(e)
    if isinstance(e, float):
        return format_float(e)
    if isinstance(e, str):
        return quote_string(e)
    if isinstance(e, Name):
        return e.id
    if isinstance(e, IntList):
        if len(e.items) > MAX_LIST_ITEMS:
            raise PrintError(f"list {list(e.items)} has more than {MAX_LIST_ITEMS} items")
        return "[" + ", ".join(i.id if isinstance(i, Name) else format_int(i) for i in e.items) + "]"
    raise PrintError(f"cannot print {e!r} as an IR expression")


def print_stmt(s) -> str:
    if isinstance(s, Return):
        return "return" + (" " + ", ".join(print_expr(v) for v in s.values) if s.values else "")
    if isinstance(s, Assign):
        targets = ", ".join(s.targets) + ("," if s.unpack and len(s.targets) == 1 else "")
        args = [print_expr(a) for a in s.args] + [f"{k}={print_expr(v)}" for k, v in s.kwargs]
        return f"{targets} = {s.callee}({', '.join(args)})"
    raise PrintError(f"not a statement: {s!r}")


def print_signature(f: Function) -> str:
    params = ", ".join(f"{p.name}: {p.type}" for p in f.params)
    if not f.return_types:
        ret = "None"
    elif f.returns_tuple or len(f.return_types) > 1:
        ret = "tuple[" + ", ".join(f.return_types) + "]"
    else:
        ret = f.return_types[0]
    return f"def {f.name}({params}) -> {ret}:"


def print_module(m: Module) -> str:
    lines = [HEADER]
    for i, f in enumerate(m.functions):
        if i:
            lines.append("")
        lines.append(print_signature(f))
        lines.extend(INDENT + print_stmt(s) for s in f.body)
    return "\n".join(lines) + "\n"
