"""A program as C++: one C++ function per IR function, one C++ line per instruction.

Every op call becomes a direct call of the kernel the interpreter's loader binds
(vm/aot.h: the op is bound by name once, at load), with the arguments in the slots
ops::bind gives them (keywords placed, defaults filled), so compiled code computes the
same bits as the interpreter. Calls stay calls (a decoder layer is one function called
per layer), while_loop is a C++ `while` and cond a C++ conditional. Values keep their
SSA names, as v_NAME (functions f_NAME, ops op_NAME, weights w_NAME: escape.py, which
every string reaching the C++ goes through); a name is dropped after its last use, as
the interpreter clears registers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from .. import ir
from ..literals import INT64_MIN
from ..registry import OpSpec
from ..escape import cpp_comment, cpp_ident, cpp_string

CONTROL = ("while_loop", "cond", "emit", "param")


class CompileError(ValueError):
    pass


class Literals:
    """Each distinct literal once, as a named vm::Value built at startup (namespace lit)."""

    def __init__(self):
        self.names: dict[tuple, str] = {}
        self.defs: list[str] = []

    def _add(self, key, name: str, init: str) -> str:
        if key in self.names:
            return self.names[key]
        base, i = name, 1
        while name in self.names.values():
            i += 1
            name = f"{base}_{i}"
        self.names[key] = name
        self.defs.append(f"const vm::Value {name} = {init};")
        return name

    def ref(self, v) -> str:
        if v is None:
            return "lit::" + self._add(("none",), "none", "vm::Value::none()")
        if isinstance(v, bool):
            return "lit::" + self._add(("bool", v), "true_" if v else "false_", f"vm::Value::from_bool({'true' if v else 'false'})")
        if isinstance(v, int):
            return "lit::" + self._add(("int", v), cpp_ident("i", f"{v}" if v >= 0 else f"m{-v}"),
                                       f"vm::Value::from_int({cpp_int(v)})")
        if isinstance(v, float):
            if math.isnan(v):
                init, name = "std::numeric_limits<double>::quiet_NaN()", "f_nan"
            elif math.isinf(v):
                init = ("-" if v < 0 else "") + "std::numeric_limits<double>::infinity()"
                name = "f_minf" if v < 0 else "f_inf"
            else:
                init = repr(v)
                name = cpp_ident("f", repr(v).replace("-", "m").replace("+", "").replace(".", "_"))
            return "lit::" + self._add(("float", repr(v)), name, f"vm::Value::from_float({init})")
        if isinstance(v, str):
            return "lit::" + self._add(("str", v), cpp_ident("s", v, limit=24), f"vm::aot::str({cpp_string(v)})")
        if isinstance(v, (list, tuple)):  # an int list default of an op
            return self.ref(ir.IntList(tuple(v)))
        if isinstance(v, ir.IntList):
            items = [i for i in v.items]
            name = cpp_ident("l", "_".join(str(i) if i >= 0 else f"m{-i}" for i in items))
            return "lit::" + self._add(("list", tuple(items)), name, "vm::aot::ints({" + ", ".join(cpp_int(i) for i in items) + "})")
        raise CompileError(f"cannot write {v!r} as a C++ literal")


def cpp_int(v: int) -> str:
    return "INT64_MIN" if v == INT64_MIN else f"int64_t{{{v}}}"


@dataclass
class Names:
    """The C++ names of one function's values (v_NAME), and of the emitter's own locals
    (t_..., fresh): the two never meet."""
    taken: set = field(default_factory=set)
    of: dict = field(default_factory=dict)

    def bind(self, name: str) -> str:
        n = cpp_ident("v", name)
        if n in self.taken:  # SSA: the checker binds each name once
            raise CompileError(f"'{name}' is bound twice")
        self.taken.add(n)
        self.of[name] = n
        return n

    def fresh(self, base: str) -> str:
        n, i = base, 1
        while n in self.taken:
            i += 1
            n = f"{base}_{i}"
        self.taken.add(n)
        return n


def bind_slots(op: OpSpec, s: ir.Assign) -> list[tuple[Optional[str], object]]:
    """The kernel's argument slots for a call, as ops::bind fills them: the non-variadic
    parameters in order (given, or their defaults), then the variadic values. Each slot
    is (label for a comment or None, the IR expression or ("default", value))."""
    vi = next((i for i, p in enumerate(op.params) if p.variadic), -1)
    positional_params = vi if vi >= 0 else len(op.params)
    if vi < 0 and len(s.args) > positional_params:
        raise CompileError(f"line {s.line}: {op.name} takes at most {positional_params} positional arguments")
    source: dict[int, tuple] = {i: (None, s.args[i]) for i in range(min(len(s.args), positional_params))}
    for k, v in s.kwargs:
        p = next((i for i, prm in enumerate(op.params) if prm.name == k and not prm.variadic), -1)
        if p < 0 or p in source:
            raise CompileError(f"line {s.line}: {op.name}: bad keyword argument '{k}'")
        source[p] = (k, v)
    slots = []
    for i, prm in enumerate(op.params):
        if i == vi:
            continue
        if i in source:
            slots.append(source[i])
        elif prm.has_default:
            slots.append((prm.name, ("default", prm.default)))
        else:
            raise CompileError(f"line {s.line}: {op.name}: missing required argument '{prm.name}'")
    if vi >= 0:
        slots.extend((None, a) for a in s.args[positional_params:])
    return slots


class FunctionWriter:
    def __init__(self, module: ir.Module, ops: dict[str, OpSpec], lits: Literals, weights: "WeightNames",
                 fn_names: dict[str, str], used_ops: dict[str, str]):
        self.module, self.ops, self.lits, self.weights = module, ops, lits, weights
        self.fn_names, self.used_ops = fn_names, used_ops
        self.functions = {f.name: f for f in module.functions}

    @staticmethod
    def returns(f: ir.Function) -> str:
        n = len(f.return_types)
        return "void" if n == 0 else "vm::Value" if n == 1 else f"std::array<vm::Value, {n}>"

    def declaration(self, f: ir.Function, names: Optional[Names] = None, unread: frozenset = frozenset()) -> str:
        # A parameter the body never reads is left unnamed (its name in a comment).
        params = ["Ctx& c"] + [f"vm::Value /*{cpp_comment(p.name)}*/" if p.name in unread else
                               f"vm::Value {names.of[p.name] if names else cpp_ident('v', p.name)}" for p in f.params]
        return f"{self.returns(f)} {self.fn_names[f.name]}({', '.join(params)})"

    @staticmethod
    def instructions(f: ir.Function) -> int:
        """The instructions the interpreter's loader makes of f (what max_instructions
        counts): one per statement, except a param() of a literal name, which it binds
        as a constant, plus the return it adds to a function without one."""
        def literal_param(s) -> bool:
            if not isinstance(s, ir.Assign) or s.callee != "param":
                return False
            given = dict(zip(("name", "index"), s.args))
            given.update(dict(s.kwargs))
            index = given.get("index")
            return index is None or (isinstance(index, int) and not isinstance(index, bool))
        n = sum(1 for s in f.body if not literal_param(s))
        return n if any(isinstance(s, ir.Return) for s in f.body) else n + 1

    def write(self, f: ir.Function) -> list[str]:
        names = Names()
        for p in f.params:
            names.bind(p.name)
        consts: set[str] = set()  # names bound to a weight by a literal param(): constants, never dropped
        last = self._last_uses(f)
        unread = frozenset(p.name for p in f.params if not self._reads(f, p.name))
        out = [f"// {cpp_comment(ir.print_signature(f))}", self.declaration(f, names, unread) + " {",
               f"  aot::Frame frame(c, {f.line}, {self.instructions(f)});"]
        i = 0
        while i < len(f.body):
            s = f.body[i]
            if isinstance(s, ir.Return):
                out.append("  " + self._return(f, s, names))
                i += 1
                continue
            run = self._layer_run(f, i)
            if run > 1:
                out.extend("  " + line for line in self._layer_loop(f.body[i:i + run], names))
                hidden = {t for st in f.body[i:i + run - 1] for t in st.targets}
                span = range(i, i + run)
            else:
                out.extend("  " + line for line in self._assign(f, s, names, consts))
                hidden, span = set(), range(i, i + 1)
            dead = [names.of[n] for n, at in last.items()
                    if at in span and n not in consts and n not in self.functions and n not in hidden]
            if dead:
                out.append(f"  aot::drop({', '.join(dead)});")
            i += run if run > 1 else 1
        out.append("}")
        return out

    def _layer_run(self, f: ir.Function, i: int) -> int:
        """How many statements from i are one function called layer after layer:
        y0 = g(x, a..., 0); y1 = g(y0, a..., 1); ... where each y is read only by the next
        call. The C++ keeps them a loop over the layer index."""
        def layer_call(s):
            if not isinstance(s, ir.Assign) or s.kwargs or len(s.targets) != 1 or s.callee not in self.functions:
                return False
            g = self.functions[s.callee]
            return (len(g.return_types) == 1 and len(s.args) >= 2 and isinstance(s.args[0], ir.Name)
                    and isinstance(s.args[-1], int) and not isinstance(s.args[-1], bool))

        if not layer_call(f.body[i]):
            return 1
        n = 1
        while i + n < len(f.body):
            prev, s = f.body[i + n - 1], f.body[i + n]
            # (the lines a constant step apart, so the loop can name each call's line)
            if not (layer_call(s) and s.callee == prev.callee and s.args[0] == ir.Name(prev.targets[0])
                    and s.args[1:-1] == prev.args[1:-1] and s.args[-1] == prev.args[-1] + 1
                    and self._read_count(f, prev.targets[0]) == 1
                    and (n == 1 or s.line - prev.line == f.body[i + 1].line - f.body[i].line)):
                break
            n += 1
        return n

    @staticmethod
    def _read_count(f: ir.Function, name: str) -> int:
        count = 0
        for s in f.body:
            for e in (s.values if isinstance(s, ir.Return) else list(s.args) + [v for _, v in s.kwargs]):
                if isinstance(e, ir.Name) and e.id == name:
                    count += 1
                elif isinstance(e, ir.IntList):
                    count += sum(1 for it in e.items if isinstance(it, ir.Name) and it.id == name)
        return count

    def _layer_loop(self, run: list, names: Names) -> list[str]:
        first, last = run[0], run[-1]
        g = self.functions[first.callee]
        index = names.fresh(cpp_ident("t", g.params[-1].name))
        y = names.bind(last.targets[0])
        rest = self._call_args(first.args[1:-1], names)
        lo, hi = first.args[-1], last.args[-1] + 1
        # the IR line of the call for each index: first.line + step * (index - lo)
        step = run[1].line - first.line
        base = first.line - step * lo
        line = f"{base} + {index}" if step == 1 else f"{base} + {step} * {index}"
        what = f"{first.targets[0]} .. {last.targets[0]}: {first.callee}(previous, ...) for {g.params[-1].name} = {lo}..{hi - 1}"
        return [f"// {cpp_comment(what)}",
                f"vm::Value {y} = {self._expr(first.args[0], names)};",
                f"for (int64_t {index} = {lo}; {index} < {hi}; ++{index})",
                f"  {y} = {self.fn_names[first.callee]}(aot::at(c, {line}), std::move({y}){rest}, "
                f"vm::Value::from_int({index}));"]

    @staticmethod
    def _reads(f: ir.Function, name: str) -> bool:
        def exprs():
            for s in f.body:
                yield from (s.values if isinstance(s, ir.Return) else list(s.args) + [v for _, v in s.kwargs])
        return any((isinstance(e, ir.Name) and e.id == name) or
                   (isinstance(e, ir.IntList) and any(isinstance(i, ir.Name) and i.id == name for i in e.items))
                   for e in exprs())

    @staticmethod
    def _last_uses(f: ir.Function) -> dict[str, int]:
        """The statement after which each name dies (never read: right after it is bound);
        names read by the return die with the function, as in the loader."""
        last: dict[str, int] = {p.name: -1 for p in f.params}
        returned: set[str] = set()

        def reads(e):
            if isinstance(e, ir.Name):
                yield e.id
            elif isinstance(e, ir.IntList):
                yield from (i.id for i in e.items if isinstance(i, ir.Name))

        for i, s in enumerate(f.body):
            if isinstance(s, ir.Return):
                for v in s.values:
                    returned.update(reads(v))
                continue
            for e in list(s.args) + [v for _, v in s.kwargs]:
                for n in reads(e):
                    last[n] = i
            for t in s.targets:
                last.setdefault(t, i)
        return {n: at for n, at in last.items() if n not in returned and at >= 0}

    def _expr(self, e, names: Names) -> str:
        if isinstance(e, ir.Name):
            if e.id in self.functions:
                raise CompileError(f"function '{e.id}' can only be passed to while_loop or cond")
            return names.of[e.id]
        if isinstance(e, ir.IntList) and any(isinstance(i, ir.Name) for i in e.items):
            return "aot::list(" + ", ".join(names.of[i.id] if isinstance(i, ir.Name) else cpp_int(i) for i in e.items) + ")"
        return self.lits.ref(e)

    def _targets(self, s: ir.Assign, n: int, names: Names, value: str, tuple_of: str = "") -> list[str]:
        """`value` (an expression of n results) bound to the statement's targets."""
        if n == 1 or (len(s.targets) == 1 and n == 0):
            return [f"vm::Value {names.bind(s.targets[0])} = {value};"]
        if len(s.targets) == 1 and not s.unpack:  # one name takes all k > 1 results as a tuple
            return [f"vm::Value {names.bind(s.targets[0])} = aot::tuple({value});"]
        if len(s.targets) != n:
            raise CompileError(f"line {s.line}: {s.callee} returns {n} values, but {len(s.targets)} names are bound")
        bound = [names.bind(t) for t in s.targets]
        return [f"auto [{', '.join(bound)}] = {value};"]

    def _call_args(self, args, names: Names) -> str:
        return "".join(", " + self._expr(a, names) for a in args)

    def _assign(self, f: ir.Function, s: ir.Assign, names: Names, consts: set) -> list[str]:
        c = s.callee
        if s.kwargs and c in ("while_loop", "cond"):
            raise CompileError(f"line {s.line}: {c} takes positional arguments only")
        if c == "param":
            return self._param(s, names, consts)
        if c == "emit":
            return [f"vm::Value {names.bind(s.targets[0])} = aot::emit(c, {s.line}{self._call_args(s.args, names)});"]
        if c == "while_loop":
            return self._while(f, s, names)
        if c == "cond":
            then_f, else_f = (self.functions[a.id] for a in s.args[1:3])
            pred = self._expr(s.args[0], names)
            args = self._call_args(s.args[3:], names)
            at = f"aot::at(c, {s.line})"
            value = (f"aot::test(c, {s.line}, {pred}) ? {self.fn_names[then_f.name]}({at}{args}) : "
                     f"{self.fn_names[else_f.name]}({at}{args})")
            return self._targets(s, len(then_f.return_types), names, value)
        if c in self.functions:
            g = self.functions[c]
            ordered = self._function_args(g, s)
            return self._targets(s, len(g.return_types), names,
                                 f"{self.fn_names[c]}(aot::at(c, {s.line}){self._call_args(ordered, names)})")
        op = self.ops.get(c)
        if op is None:
            raise CompileError(f"line {s.line}: unknown op or function '{c}'")
        self.used_ops.setdefault(c, cpp_ident("op", c))
        slots = []
        for label, e in bind_slots(op, s):
            text = self.lits.ref(e[1]) if isinstance(e, tuple) and e and e[0] == "default" else self._expr(e, names)
            slots.append(f"/*{cpp_comment(label)}=*/{text}" if label else text)
        args = "".join(", " + a for a in slots)
        n = len(op.outputs)
        call = f"aot::call(c, {s.line}, c.op.{self.used_ops[c]}{args})" if n == 1 else \
            f"aot::call_n<{n}>(c, {s.line}, c.op.{self.used_ops[c]}{args})"
        return self._targets(s, n, names, call)

    @staticmethod
    def _function_args(g: ir.Function, s: ir.Assign) -> list:
        by_slot: dict[int, object] = dict(enumerate(s.args))
        for k, v in s.kwargs:
            i = next((j for j, p in enumerate(g.params) if p.name == k), -1)
            if i < 0 or i in by_slot:
                raise CompileError(f"line {s.line}: bad argument '{k}' of '{g.name}'")
            by_slot[i] = v
        if sorted(by_slot) != list(range(len(g.params))):
            raise CompileError(f"line {s.line}: '{g.name}' takes {len(g.params)} arguments")
        return [by_slot[i] for i in range(len(g.params))]

    def _param(self, s: ir.Assign, names: Names, consts: set) -> list[str]:
        given = dict(zip(("name", "index"), s.args))
        given.update(dict(s.kwargs))
        name, index = given.get("name"), given.get("index")
        if not isinstance(name, str):
            raise CompileError(f"line {s.line}: param: the weight name must be a string literal")
        if isinstance(index, int) and not isinstance(index, bool):
            name, index = name.replace("{}", str(index), 1), None
        target = names.bind(s.targets[0])
        if index is None:
            consts.add(s.targets[0])
            return [f"const vm::Value& {target} = c.w.{self.weights.single(name)};"]
        consts.add(s.targets[0])
        return [f"const vm::Value& {target} = aot::param(c, {s.line}, c.w.{self.weights.table(name)}, {self._expr(index, names)});"]

    def _while(self, f: ir.Function, s: ir.Assign, names: Names) -> list[str]:
        cond_f, body_f = (self.functions[a.id] for a in s.args[:2])
        carried = s.args[2:]
        k = len(carried)
        v = names.fresh(f"t_loop_{s.line}")
        items = ", ".join(f"{v}[{i}]" for i in range(k))
        moved = ", ".join(f"std::move({v}[{i}])" for i in range(k))
        at = f"aot::at(c, {s.line})"
        step = f"{v} = {self.fn_names[body_f.name]}({at}, {moved});" if k > 1 else \
            f"{v}[0] = {self.fn_names[body_f.name]}({at}, {moved});"
        lines = [f"std::array<vm::Value, {k}> {v}{{{', '.join(self._expr(a, names) for a in carried)}}};",
                 f"while (aot::loop(c, {s.line}, {self.fn_names[cond_f.name]}({at}, {items})))",
                 f"  {step}"]
        if len(s.targets) == 1 and k > 1 and not s.unpack:
            lines.append(f"vm::Value {names.bind(s.targets[0])} = aot::tuple(std::move({v}));")
        else:
            if len(s.targets) != k:
                raise CompileError(f"line {s.line}: while_loop carries {k} values, but {len(s.targets)} names are bound")
            lines.append(f"auto& [{', '.join(names.bind(t) for t in s.targets)}] = {v};")
        return lines

    def _return(self, f: ir.Function, s: ir.Return, names: Names) -> str:
        vals = [self._expr(e, names) for e in s.values]
        if not vals:
            return "return;"
        if len(vals) == 1:
            return f"return {vals[0]};"
        return "return {" + ", ".join(vals) + "};"


class WeightNames:
    """The C++ member of each weight (param("name")) and weight table (param("a.{}.b", i))."""

    def __init__(self):
        self.singles: dict[str, str] = {}
        self.tables: dict[str, str] = {}
        self._names = Names()

    def _member(self, name: str) -> str:
        return self._names.fresh(cpp_ident("w", name.replace("{}", "N")))

    def single(self, name: str) -> str:
        if name not in self.singles:
            self.singles[name] = self._member(name)
        return self.singles[name]

    def table(self, template: str) -> str:
        if template not in self.tables:
            self.tables[template] = self._member(template)
        return self.tables[template]
