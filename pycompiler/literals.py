"""How the IR text spells its header and literals (docs/ir.md, "Canonical printing"):
the rules the printer (ir.py) writes by and the checker (ir_check.py) reads by.

Must produce the same bytes as ir/printer.cpp; the literal rules are stated at the
top of that file. Python's repr(float) is the reference the C++ side reproduces,
so floats need no work here; strings follow the C++ byte-level escaping, which for
valid UTF-8 text is the same character by character.
"""
from __future__ import annotations

import math

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
