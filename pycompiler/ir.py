"""The IR as Python data: the same shape as the C++ AST (ir/ast.h), and its canonical text.

The builder produces it, `str(module)` prints it (print_module, the Python twin of
ir/printer.cpp), and `ir_check.parse()` (from a checked Python AST) reads it back,
so a program round-trips through text.
Expressions are plain Python values (None, bool, int, float, str) plus Name and IntList.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from .literals import HEADER, INDENT, MAX_LIST_ITEMS, PrintError, format_float, format_int, quote_string


@dataclass(frozen=True)
class Name:
    id: str


@dataclass(frozen=True)
class IntList:
    items: tuple[Union[int, Name], ...]


Expr = Union[None, bool, int, float, str, Name, IntList]


@dataclass
class Assign:
    targets: list[str]
    callee: str
    args: list[Expr] = field(default_factory=list)
    kwargs: list[tuple[str, Expr]] = field(default_factory=list)
    unpack: bool = False  # "a, = f(...)": a single target that unpacks a 1-tuple
    line: int = 0


@dataclass
class Return:
    values: list[Expr] = field(default_factory=list)
    line: int = 0


Stmt = Union[Assign, Return]


@dataclass
class Param:
    name: str
    type: str


@dataclass
class Function:
    name: str
    params: list[Param]
    return_types: list[str]
    returns_tuple: bool = False  # "-> tuple[...]" even with one element
    body: list[Stmt] = field(default_factory=list)
    line: int = 0

    def signature(self) -> str:
        return print_signature(self)

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.body:
            if isinstance(s, Assign):
                counts[s.callee] = counts.get(s.callee, 0) + 1
        return counts


@dataclass
class Module:
    functions: list[Function] = field(default_factory=list)

    def __str__(self) -> str:
        return print_module(self)

    @property
    def text(self) -> str:
        return str(self)

    def function(self, name: str) -> Function:
        f = self.get(name)
        if f is None:
            known = ", ".join(fn.name for fn in self.functions) or "none"
            raise KeyError(f"no function '{name}' in the program (functions: {known})")
        return f

    def get(self, name: str) -> Optional[Function]:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    @property
    def function_names(self) -> list[str]:
        return [f.name for f in self.functions]


# ---------------------------------------------------------------- printing


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
