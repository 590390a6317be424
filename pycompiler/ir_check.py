"""Checks IR text against the grammar of docs/ir.md before Python ever runs it.

`tensorvm.replay` execs program text, which may come from anywhere, so this is an
allow-list over the Python AST: it may contain only the node shapes the grammar
produces, and every name must be a parameter, a local, a function of the program,
an op or an IR builtin. Anything else (imports, attributes, dunders, operators,
lambdas, ...) is an IRCheckError naming the line. The walk follows the grammar, so
its depth is fixed whatever the input. How the text is spelled (one statement a
line, no trailing commas, literals as the C++ lexer spells them, no tabs or
control characters) is the C++ parser's to check (`_C.parse_and_print`, ir/parser.cpp):
it reads the same text after the walk, so Python accepts what the VM accepts.
"""
from __future__ import annotations

import ast
import keyword
import re
import warnings
from typing import Iterable, NamedTuple, Optional

from .. import _C
from . import ir, registry
from .literals import HEADER, INT64_MAX, MAX_LIST_ITEMS
from .types import VALUE_TYPES

BUILTIN_CALLEES = frozenset({"param", "while_loop", "cond", "emit"})


def called_ops(module: ir.Module) -> set[str]:
    """The names `module` calls that are neither IR builtins nor its own functions: its ops."""
    used = {s.callee for f in module.functions for s in f.body if isinstance(s, ir.Assign)}
    return used - BUILTIN_CALLEES - set(module.function_names)


RESERVED = frozenset({"param", "while_loop", "cond", "emit", "inf", "nan"})

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# The C++ parser's errors read "program.py:LINE: message".
_CPP_ERROR = re.compile(r"[^\n]*?:(\d+): (.*)\Z", re.S)

# Why a node is refused, for errors that say what was written rather than "bad node".
_REFUSED = {
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed (only in a 'tuple[...]' return annotation)",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "generator expressions are not allowed",
    ast.BinOp: "operators are not allowed: write an op call such as add(x, y)",
    ast.BoolOp: "operators are not allowed: write an op call such as logical_and(a, b)",
    ast.Compare: "comparisons are not allowed: write an op call such as lt(a, b)",
    ast.UnaryOp: "operators are not allowed (only '-' before a number or inf)",
    ast.IfExp: "conditional expressions are not allowed: use cond(pred, then_fn, else_fn, ...)",
    ast.JoinedStr: "f-strings are not allowed",
    ast.FormattedValue: "f-strings are not allowed",
    ast.Call: "nested calls are not allowed: assign each call to a name first",
    ast.Starred: "starred expressions are not allowed",
    ast.NamedExpr: "assignment expressions (:=) are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield is not allowed",
    ast.Dict: "dicts are not allowed",
    ast.Set: "sets are not allowed",
    ast.Tuple: "tuples are only allowed as assignment targets and return values",
    ast.Slice: "slices are not allowed",
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.Global: "global is not allowed",
    ast.Nonlocal: "nonlocal is not allowed",
    ast.ClassDef: "classes are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed",
    ast.With: "with statements are not allowed",
    ast.AsyncWith: "with statements are not allowed",
    ast.Try: "try statements are not allowed",
    ast.For: "for loops are not allowed: use while_loop(cond_fn, body_fn, ...)",
    ast.AsyncFor: "for loops are not allowed: use while_loop(cond_fn, body_fn, ...)",
    ast.While: "while statements are not allowed: use while_loop(cond_fn, body_fn, ...)",
    ast.If: "if statements are not allowed: use cond(pred, then_fn, else_fn, ...)",
    ast.AugAssign: "augmented assignment is not allowed (SSA: bind a new name)",
    ast.AnnAssign: "annotated assignment is not allowed",
    ast.Expr: "a statement is 'names = call(...)' or 'return ...' (the result of a call must be assigned)",
    ast.Pass: "pass is not allowed",
    ast.Delete: "del is not allowed",
    ast.Raise: "raise is not allowed",
    ast.Assert: "assert is not allowed",
    ast.Break: "break is not allowed",
    ast.Continue: "continue is not allowed",
}
if hasattr(ast, "TryStar"):
    _REFUSED[ast.TryStar] = "try statements are not allowed"
if hasattr(ast, "Match"):
    _REFUSED[ast.Match] = "match statements are not allowed"


class IRCheckError(ValueError):
    """The text is not valid IR; `line` is 1-based (0 when not tied to a line)."""

    def __init__(self, filename: str, line: int, message: str):
        super().__init__(f"{filename}:{line}: {message}")
        self.filename = filename
        self.line = line
        self.message = message


def _refusal(node: ast.AST) -> str:
    for cls in type(node).__mro__:
        if cls in _REFUSED:
            return _REFUSED[cls]
    return f"{type(node).__name__} is not allowed here"


def _is_dunder(name: str) -> bool:
    return len(name) >= 4 and name.startswith("__") and name.endswith("__")


class _Checker:
    def __init__(self, text: str, filename: str, ops: Optional[Iterable[str]], types: Optional[Iterable[str]]):
        self.text = text
        self.filename = filename
        self.any_callee = ops == "*"
        self.ops = frozenset() if self.any_callee else frozenset(registry.ops() if ops is None else ops)
        if types == "*":
            self.types = None
        else:
            self.types = frozenset(VALUE_TYPES) | frozenset(types if types is not None else registry.object_types())
        self.functions: dict[str, int] = {}
        self.callees: dict[str, int] = {}
        self.edges: dict[str, list[tuple[str, int]]] = {}

    def fail(self, line: int, msg: str):
        raise IRCheckError(self.filename, line, msg)

    # ------------------------------------------------------------ text level

    def check_header(self):
        first = self.text.split("\n", 1)[0].rstrip("\r")
        if first != HEADER:
            if first.startswith("# tensorvm ir "):
                self.fail(1, f"unsupported IR version in header {first[:40]!r} (this reader knows {HEADER!r})")
            self.fail(1, f"missing header: the first line must be {HEADER!r}")

    def check_spelling(self):
        """The C++ parser reads the text (where this build has it): what the AST walk
        cannot see, how each line is spelled, is refused as the VM refuses it."""
        parse = getattr(_C, "parse_and_print", None)
        if parse is None:
            return
        try:
            parse(self.text)
        except _C.VMError as e:
            m = _CPP_ERROR.match(str(e))
            self.fail(int(m.group(1)), m.group(2)) if m else self.fail(0, str(e))

    def parse_ast(self) -> ast.Module:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes etc.: the C++ parser refuses them
                return ast.parse(self.text, filename=self.filename, mode="exec", type_comments=False)
        except SyntaxError as e:
            self.fail(e.lineno or 0, f"syntax error: {e.msg}")
        except (RecursionError, MemoryError):
            self.fail(0, "nesting too deep")
        except ValueError as e:
            self.fail(0, str(e))

    # ------------------------------------------------------------ names

    def name_ok(self, line: int, name: str, role: str):
        if not _NAME.match(name):
            self.fail(line, f"{role} name {name!r} must be ASCII letters, digits and '_'")
        if keyword.iskeyword(name):
            self.fail(line, f"'{name}' is a Python keyword and cannot be a {role} name")
        if _is_dunder(name):
            self.fail(line, f"dunder name '{name}' is not allowed")

    def bindable(self, line: int, name: str, role: str):
        self.name_ok(line, name, role)
        if name in RESERVED:
            self.fail(line, f"'{name}' is a builtin of the IR and cannot be a {role} name")
        if name in self.ops:
            self.fail(line, f"'{name}' is the name of an op and cannot be a {role} name")
        if role != "function":
            if name in self.functions:
                self.fail(line, f"'{name}' is the name of a function of the program and cannot be bound")
            if name in self.callees:
                self.fail(line, f"'{name}' is called as an op or function (line {self.callees[name]}) and cannot also be a variable")
        elif name in self.annotated or name in VALUE_TYPES or name == "tuple" or (self.types is not None and name in self.types):
            self.fail(line, f"'{name}' is a type name and cannot be a function name")

    def type_ok(self, node: ast.AST, line: int) -> str:
        if not isinstance(node, ast.Name):
            if isinstance(node, ast.Constant) and node.value is None:
                self.fail(line, "None is only allowed as a whole return type ('-> None')")
            self.fail(line, f"a type must be a name (Tensor, int, float, bool, str, Any or an object type): {_refusal(node)}")
        self.name_ok(line, node.id, "type")
        if self.types is not None and node.id not in self.types:
            known = ", ".join(sorted(self.types))
            self.fail(line, f"unknown type '{node.id}' (known: {known})")
        return node.id

    # ------------------------------------------------------------ program

    def run(self) -> tuple[ast.Module, ir.Module]:
        self.check_header()
        try:
            tree = self.parse_ast()
        except IRCheckError:
            self.check_spelling()  # the C++ parser says more than Python's syntax error
            raise
        module = self.walk(tree)
        self.check_spelling()
        return tree, module

    def walk(self, tree: ast.Module) -> ir.Module:
        # Every name an annotation uses is a type: no function may take it (it would
        # shadow the type marker in the replay).
        self.annotated = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                notes = [a.annotation for a in node.args.args if a.annotation is not None] + [node.returns]
                for n in notes:
                    if isinstance(n, ast.Subscript):
                        n = n.slice
                    for e in (n.elts if isinstance(n, ast.Tuple) else [n]):
                        if isinstance(e, ast.Name):
                            self.annotated.add(e.id)
        defs = []
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                self.fail(node.lineno, "only function definitions may stand at top level: " + _refusal(node))
            if node.col_offset != 0:
                self.fail(node.lineno, "unexpected indentation")
            if node.name in self.functions:
                self.fail(node.lineno, f"duplicate function '{node.name}' (first defined at line {self.functions[node.name]})")
            self.bindable(node.lineno, node.name, "function")
            self.functions[node.name] = node.lineno
            defs.append(node)
        # Callees over the whole program first: a local may not shadow any of them.
        for node in defs:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
                    self.callees.setdefault(stmt.value.func.id, stmt.lineno)
        module = ir.Module([self.function(node) for node in defs])
        self.check_no_recursion()
        return module

    def function(self, node: ast.FunctionDef) -> ir.Function:
        line = node.lineno
        if node.decorator_list:
            self.fail(node.decorator_list[0].lineno, "decorators are not allowed")
        if getattr(node, "type_params", None):
            self.fail(line, "type parameters are not allowed")
        a = node.args
        if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg:
            self.fail(line, "parameters are plain 'name: Type' (no '/', '*', *args or **kwargs)")
        if a.defaults or a.kw_defaults:
            self.fail(line, "default values are not allowed")
        if node.returns is None:
            self.fail(line, f"expected '->' and a return type after the parameters of '{node.name}'")
        if not node.body or node.body[0].lineno == line:
            self.fail(line, f"the body of '{node.name}' starts on the next line, indented")
        header_end = max([line] + [x.end_lineno for x in a.args] + [x.annotation.end_lineno for x in a.args if x.annotation]
                         + [node.returns.end_lineno])
        if header_end != line:
            self.fail(line, "a 'def' line must stand on one line")
        params = []
        bound: dict[str, int] = {}
        for p in a.args:
            if p.annotation is None:
                self.fail(line, f"parameter '{p.arg}' needs a type annotation, e.g. '{p.arg}: Tensor'")
            if p.arg in bound:
                self.fail(line, f"duplicate parameter '{p.arg}' in function '{node.name}'")
            self.bindable(line, p.arg, "parameter")
            bound[p.arg] = line
            params.append(ir.Param(p.arg, self.type_ok(p.annotation, line)))
        return_types, returns_tuple = self.return_annotation(node.returns, line)
        fn = ir.Function(node.name, params, return_types, returns_tuple, [], line)
        self.edges[node.name] = []

        assigned_later = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(e, ast.Name):
                            assigned_later.setdefault(e.id, stmt.lineno)
        ret_line = prev_end = 0
        for k, stmt in enumerate(node.body):
            if ret_line:
                self.fail(stmt.lineno, f"unreachable statement after 'return' (line {ret_line}) in function '{node.name}'")
            if isinstance(stmt, ast.FunctionDef):
                self.fail(stmt.lineno, "nested function definitions are not allowed")
            if not isinstance(stmt, (ast.Return, ast.Assign)):
                self.fail(stmt.lineno, _refusal(stmt))
            if stmt.col_offset == 0:
                self.fail(stmt.lineno, "expected an indented statement")
            if stmt.lineno == prev_end or (k + 1 < len(node.body) and node.body[k + 1].lineno == stmt.end_lineno):
                self.fail(stmt.lineno, "one statement per line (no ';')")
            prev_end = stmt.end_lineno
            if isinstance(stmt, ast.Return):
                fn.body.append(self.return_stmt(stmt, bound, assigned_later))
                ret_line = stmt.lineno
            else:
                fn.body.append(self.assign(node.name, stmt, bound, assigned_later))
        return fn

    def return_annotation(self, node: ast.AST, line: int) -> tuple[list[str], bool]:
        if isinstance(node, ast.Constant) and node.value is None:
            return [], False
        if isinstance(node, ast.Subscript):
            if not (isinstance(node.value, ast.Name) and node.value.id == "tuple"):
                self.fail(line, "the only subscript allowed is a 'tuple[...]' return annotation")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [self.type_ok(e, line) for e in elts], True
        return [self.type_ok(node, line)], False

    # ------------------------------------------------------------ statements

    def use(self, line: int, name: str, bound: dict, assigned_later: dict, function_ok: bool):
        if name in bound:
            return
        if name in self.functions:
            if function_ok:
                return
            self.fail(line, f"function '{name}' can only be passed as an argument to a call")
        if name in assigned_later:
            self.fail(line, f"name '{name}' is used before it is bound (at line {assigned_later[name]})")
        if name in self.ops or name in BUILTIN_CALLEES or name in self.callees:
            self.fail(line, f"'{name}' is an op or builtin and can only be called, not passed as a value")
        self.fail(line, f"unknown name '{name}'")

    def expr(self, node: ast.AST, line: int, bound: dict, later: dict, function_ok: bool) -> ir.Expr:
        if isinstance(node, ast.Name):
            if node.id in ("inf", "nan"):
                return float(node.id)
            self.name_ok(line, node.id, "variable")
            self.use(line, node.id, bound, later, function_ok)
            return ir.Name(node.id)
        if isinstance(node, ast.Constant):
            return self.constant(node, line, negative=False)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = node.operand
            if isinstance(inner, ast.Name) and inner.id == "inf":
                return float("-inf")
            if isinstance(inner, ast.Constant) and type(inner.value) in (int, float):
                return self.constant(inner, line, negative=True)
            self.fail(line, "'-' must be followed by a number or 'inf'")
        if isinstance(node, ast.List):
            return self.int_list(node, line, bound, later)
        self.fail(line, _refusal(node))

    def constant(self, node: ast.Constant, line: int, negative: bool) -> ir.Expr:
        """A literal's value (how it is spelled: check_spelling)."""
        v = node.value
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            if v > INT64_MAX + (1 if negative else 0):
                self.fail(line, f"integer literal {'-' if negative else ''}{v} does not fit in int64")
            return -v if negative else v
        if isinstance(v, float):
            return -v if negative else v
        self.fail(line, f"{type(v).__name__} literals are not allowed")

    def int_list(self, node: ast.List, line: int, bound: dict, later: dict) -> ir.IntList:
        if len(node.elts) > MAX_LIST_ITEMS:
            self.fail(line, f"list has more than {MAX_LIST_ITEMS} items")
        items = []
        for e in node.elts:
            if isinstance(e, ast.Name) and e.id not in RESERVED:
                self.name_ok(line, e.id, "variable")
                self.use(line, e.id, bound, later, function_ok=False)
                items.append(ir.Name(e.id))
                continue
            neg = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)
            c = e.operand if neg else e
            if not (isinstance(c, ast.Constant) and type(c.value) is int):
                self.fail(line, "list items must be ints or names")
            items.append(self.constant(c, line, negative=neg))
        return ir.IntList(tuple(items))

    def assign(self, fname: str, stmt: ast.Assign, bound: dict, later: dict) -> ir.Assign:
        line = stmt.lineno
        if len(stmt.targets) != 1:
            self.fail(line, "chained assignment is not allowed")
        if stmt.type_comment:
            self.fail(line, "type comments are not allowed")
        t = stmt.targets[0]
        unpack = False
        if isinstance(t, ast.Name):
            targets = [t]
        elif isinstance(t, ast.Tuple):
            targets = t.elts
            unpack = len(targets) == 1
            if not targets:
                self.fail(line, "empty assignment target")
        else:
            self.fail(line, "assignment targets are names ('a = ...' or 'a, b = ...'): " + _refusal(t))
        call = stmt.value
        if not isinstance(call, ast.Call):
            self.fail(line, "expected a call 'op(...)' after '=': " + _refusal(call))
        if not isinstance(call.func, ast.Name):
            self.fail(line, "the callee must be the name of an op or function: " + _refusal(call.func))
        callee = call.func.id
        self.name_ok(line, callee, "callee")
        if callee in ("inf", "nan"):
            self.fail(line, f"'{callee}' cannot be called")
        if callee in self.functions:
            self.edges[fname].append((callee, line))
        elif callee not in BUILTIN_CALLEES and callee not in self.ops and not self.any_callee:
            self.fail(line, f"unknown op or function '{callee}'")
        args = []
        for a in call.args:
            args.append(self.expr(a, line, bound, later, function_ok=True))
            self.note_function_arg(fname, a, line)
        kwargs = []
        for k in call.keywords:
            if k.arg is None:
                self.fail(line, "'**' arguments are not allowed")
            self.name_ok(line, k.arg, "keyword argument")
            kwargs.append((k.arg, self.expr(k.value, line, bound, later, function_ok=True)))
            self.note_function_arg(fname, k.value, line)
        if not self.any_callee:
            self.builtin_shape(callee, args, kwargs, line)
        names = []
        for e in targets:
            if not isinstance(e, ast.Name):
                self.fail(line, "assignment targets are names: " + _refusal(e))
            n = e.id
            if n in bound:
                self.fail(line, f"'{n}' is already bound at line {bound[n]} (SSA: one binding per name)")
            self.bindable(line, n, "variable")
            bound[n] = line
            names.append(n)
        return ir.Assign(names, callee, args, kwargs, unpack, line)

    def builtin_shape(self, callee: str, args: list, kwargs: list, line: int):
        """The builtins take function names and literal weight names in fixed places."""
        if callee in ("while_loop", "cond"):
            first = 0 if callee == "while_loop" else 1
            need = first + 2
            if kwargs or len(args) < need:
                what = "while_loop(cond_fn, body_fn, *carried)" if callee == "while_loop" else "cond(pred, then_fn, else_fn, *args)"
                self.fail(line, f"{callee} takes positional arguments: {what}")
            for a in args[first:need]:
                if not (isinstance(a, ir.Name) and a.id in self.functions):
                    self.fail(line, f"{callee} needs function names of the program in argument {first + 1} and {first + 2}")
        elif callee == "emit":
            if kwargs or len(args) != 2:
                self.fail(line, "emit takes two positional arguments: emit(channel, value)")
            if not isinstance(args[0], str):
                self.fail(line, "emit: the channel must be a string literal")
        elif callee == "param":
            slots = {"name": None, "index": None}
            if len(args) > 2:
                self.fail(line, "param takes a name and an optional index")
            for key, value in zip(("name", "index"), args):
                slots[key] = value
            for key, value in kwargs:
                if key not in slots:
                    self.fail(line, f"param: unknown keyword argument '{key}'")
                slots[key] = value
            name, index = slots["name"], slots["index"]
            if not isinstance(name, str):
                self.fail(line, "param: the weight name must be a string literal: param(\"name.{}.w\", i)")
            if index is not None and (isinstance(index, bool) or not isinstance(index, (int, ir.Name))):
                self.fail(line, "param: the index must be an int or a name")
            if index is not None and "{}" not in name:
                self.fail(line, "param: an index needs a name template with '{}'")
        # Function names stand only in the body slots of while_loop and cond.
        body_slots = {0, 1} if callee == "while_loop" else {1, 2} if callee == "cond" else set()
        for i, a in enumerate(args):
            if isinstance(a, ir.Name) and a.id in self.functions and i not in body_slots:
                self.fail(line, f"function '{a.id}' can only be passed to while_loop or cond")
        for _, a in kwargs:
            if isinstance(a, ir.Name) and a.id in self.functions:
                self.fail(line, f"function '{a.id}' can only be passed to while_loop or cond")

    def note_function_arg(self, fname: str, node: ast.AST, line: int):
        if isinstance(node, ast.Name) and node.id in self.functions:
            self.edges[fname].append((node.id, line))

    def return_stmt(self, stmt: ast.Return, bound: dict, later: dict) -> ir.Return:
        line = stmt.lineno
        if stmt.value is None:
            return ir.Return([], line)
        values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
        return ir.Return([self.expr(v, line, bound, later, function_ok=False) for v in values], line)

    def check_no_recursion(self):
        # Iterative DFS: a long chain of functions must not exhaust the stack.
        color = {name: 0 for name in self.functions}
        for root in self.functions:
            if color[root]:
                continue
            stack = [(root, 0)]
            color[root] = 1
            while stack:
                name, i = stack[-1]
                out = self.edges.get(name, [])
                if i == len(out):
                    color[name] = 2
                    stack.pop()
                    continue
                stack[-1] = (name, i + 1)
                to, line = out[i]
                if color[to] == 1:
                    path = [n for n, _ in stack]
                    path = path[path.index(to):] + [to]
                    self.fail(line, "recursion is not allowed (loops are while_loop): " + " -> ".join(path))
                if color[to] == 0:
                    color[to] = 1
                    stack.append((to, 0))


def _decode(text, filename: str) -> str:
    if isinstance(text, (bytes, bytearray)):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            line = bytes(text)[:e.start].count(b"\n") + 1
            raise IRCheckError(filename, line, "invalid UTF-8") from None
    if not isinstance(text, str):
        raise TypeError(f"IR text must be str or bytes, not {type(text).__name__}")
    return text


class Checked(NamedTuple):
    tree: ast.Module  # the Python AST, what replay compiles
    module: ir.Module  # the same program as IR data


def check_and_parse(text, *, ops=None, types=None, filename: str = "program.py") -> Checked:
    """Checks IR text (str or UTF-8 bytes); returns its AST and its ir.Module, or raises IRCheckError.

    `ops`: the op names callable besides program functions and builtins (default:
    the registry). "*" allows any callee and skips the checks of how builtins are
    called: the grammar alone, as the C++ parser checks it (ir::parse). `types`: object
    type names allowed in annotations besides the value types (default: the
    registry's object types; "*" allows any name).
    """
    return Checked(*_Checker(_decode(text, filename), filename, ops, types).run())


def check(text, *, ops=None, types=None, filename: str = "program.py") -> ast.Module:
    """Checks IR text; returns its Python AST (see check_and_parse)."""
    return check_and_parse(text, ops=ops, types=types, filename=filename).tree


def parse(text, *, ops=None, types=None, filename: str = "program.py") -> ir.Module:
    """Checks IR text and returns it as an ir.Module (print(parse(t)) is canonical)."""
    return check_and_parse(text, ops=ops, types=types, filename=filename).module
