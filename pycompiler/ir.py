"""The IR as Python data: the same shape as the C++ AST (ir/ast.h).

The builder produces it, the printer prints it, and `parse()` (from a checked
Python AST) reads it back, so a program round-trips through text.
Expressions are plain Python values (None, bool, int, float, str) plus Name and IntList.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


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
        from .printer import print_signature

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
        from .printer import print_module

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
