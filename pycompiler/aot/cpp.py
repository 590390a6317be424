"""A program as C++: one C++ function per IR function, one C++ line per instruction.

What it prints is the program as the interpreter's loader resolved it (tensorvm._C.resolve,
pycompiler/bindings/resolved.cpp), not worked out again here: each op call is a direct
call of the kernel the loader binds (vm/aot.h: the op is bound by name once, at load),
with the arguments in the slots ops::bind gave them (keywords placed, defaults filled),
so compiled code computes the same bits as the interpreter; each register is dropped
after the instruction the loader frees it at. Calls stay calls (a decoder layer is one
function called per layer), while_loop is a C++ `while` and cond a C++ conditional.
Values keep their SSA names, as v_NAME (functions f_NAME, ops op_NAME, weights w_NAME:
escape.py, which every string reaching the C++ goes through).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..literals import INT64_MIN
from ..escape import cpp_comment, cpp_ident, cpp_string


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
        if isinstance(v, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in v):
            items = list(v)  # an int list
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

    def bind(self, name: str, key=None) -> str:
        n = cpp_ident("v", name)
        if n in self.taken:  # SSA: the checker binds each name once
            raise CompileError(f"'{name}' is bound twice")
        self.taken.add(n)
        self.of[name if key is None else key] = n
        return n

    def fresh(self, base: str) -> str:
        n, i = base, 1
        while n in self.taken:
            i += 1
            n = f"{base}_{i}"
        self.taken.add(n)
        return n


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class FunctionWriter:
    """Writes the functions of a resolved program (tensorvm._C.resolve: dicts of each
    function's registers, constants, lists and instructions) as C++."""

    def __init__(self, functions: list[dict], lines: list[str], lits: Literals, weights: "WeightNames",
                 fn_names: list[str], used_ops: dict[str, str]):
        self.functions, self.lines, self.lits, self.weights = functions, lines, lits, weights
        self.fn_names, self.used_ops = fn_names, used_ops
        self._index = {id(f): i for i, f in enumerate(functions)}

    @staticmethod
    def returns(f: dict) -> str:
        n = len(f["return_types"])
        return "void" if n == 0 else "vm::Value" if n == 1 else f"std::array<vm::Value, {n}>"

    def declaration(self, f: dict, names: Optional[Names] = None, unread: frozenset = frozenset()) -> str:
        # A parameter the body never reads is left unnamed (its name in a comment).
        fn = self.fn_names[self._index[id(f)]]
        params = ["Ctx& c"] + [f"vm::Value /*{cpp_comment(p)}*/" if r in unread else
                               f"vm::Value {names.of[r] if names else cpp_ident('v', p)}" for r, p in enumerate(f["params"])]
        return f"{self.returns(f)} {fn}({', '.join(params)})"

    @staticmethod
    def _reads(f: dict) -> dict[int, int]:
        """How many times each register is read (a list's items counted)."""
        count: dict[int, int] = {}
        for ins in f["code"]:
            for frm, i in ins["args"]:
                for frm2, j in (f["lists"][i] if frm == "list" else [(frm, i)]):
                    if frm2 == "reg":
                        count[j] = count.get(j, 0) + 1
        return count

    def write(self, f: dict) -> list[str]:
        names = Names()
        for r, name in enumerate(f["reg_names"][:len(f["params"])]):
            names.bind(name, r)
        reads = self._reads(f)
        refs: set[int] = set()  # registers bound to a weight of a table (param(template, i)): never dropped
        unread = frozenset(r for r in range(len(f["params"])) if r not in reads)
        line = self.lines[f["line"] - 1].strip() if 0 < f["line"] <= len(self.lines) else f["name"]
        out = [f"// {cpp_comment(line)}", self.declaration(f, names, unread) + " {",
               f"  aot::Frame frame(c, {f['line']}, {len(f['code'])});"]
        code = f["code"]
        i = 0
        while i < len(code):
            ins = code[i]
            if ins["kind"] == "return":
                out.append("  " + self._return(f, ins, names))
                i += 1
                continue
            run = self._layer_run(f, i, reads)
            if run > 1:
                out.extend("  " + line for line in self._layer_loop(f, code[i:i + run], names))
                hidden = {r for ins2 in code[i:i + run - 1] for r in ins2["outs"]}
            else:
                out.extend("  " + line for line in self._instruction(f, ins, names, refs))
                hidden = set()
            dead = [names.of[r] for ins2 in code[i:i + run] for r in ins2["frees"] if r not in refs and r not in hidden]
            if dead:
                out.append(f"  aot::drop({', '.join(dead)});")
            i += run
        out.append("}")
        return out

    def _const_int(self, f: dict, operand) -> Optional[int]:
        frm, i = operand
        if frm == "const" and f["consts"][i][0] == "value" and _is_int(f["consts"][i][1]):
            return f["consts"][i][1]
        return None

    def _layer_run(self, f: dict, i: int, reads: dict[int, int]) -> int:
        """How many instructions from i are one function called layer after layer:
        y0 = g(x, a..., 0); y1 = g(y0, a..., 1); ... where each y is read only by the next
        call. The C++ keeps them a loop over the layer index."""
        code = f["code"]

        def layer_call(ins):
            return (ins["kind"] == "call" and len(ins["outs"]) == 1 and not ins["pack_tuple"]
                    and len(self.functions[ins["fn_a"]]["return_types"]) == 1 and len(ins["args"]) >= 2
                    and ins["args"][0][0] == "reg" and self._const_int(f, ins["args"][-1]) is not None)

        if not layer_call(code[i]):
            return 1
        n = 1
        while i + n < len(code):
            prev, ins = code[i + n - 1], code[i + n]
            # (the lines a constant step apart, so the loop can name each call's line)
            if not (layer_call(ins) and ins["fn_a"] == prev["fn_a"] and ins["args"][0] == ("reg", prev["outs"][0])
                    and ins["args"][1:-1] == prev["args"][1:-1]
                    and self._const_int(f, ins["args"][-1]) == self._const_int(f, prev["args"][-1]) + 1
                    and reads.get(prev["outs"][0], 0) == 1
                    and (n == 1 or ins["line"] - prev["line"] == code[i + 1]["line"] - code[i]["line"])):
                break
            n += 1
        return n

    def _layer_loop(self, f: dict, run: list[dict], names: Names) -> list[str]:
        first, last = run[0], run[-1]
        g = self.functions[first["fn_a"]]
        index = names.fresh(cpp_ident("t", g["params"][-1]))
        y = names.bind(f["reg_names"][last["outs"][0]], last["outs"][0])
        rest = self._call_args(f, first["args"][1:-1], names)
        lo, hi = self._const_int(f, first["args"][-1]), self._const_int(f, last["args"][-1]) + 1
        # the IR line of the call for each index: first.line + step * (index - lo)
        step = run[1]["line"] - first["line"]
        base = first["line"] - step * lo
        line = f"{base} + {index}" if step == 1 else f"{base} + {step} * {index}"
        what = (f"{f['reg_names'][first['outs'][0]]} .. {f['reg_names'][last['outs'][0]]}: {g['name']}(previous, ...) "
                f"for {g['params'][-1]} = {lo}..{hi - 1}")
        return [f"// {cpp_comment(what)}",
                f"vm::Value {y} = {self._expr(f, first['args'][0], names)};",
                f"for (int64_t {index} = {lo}; {index} < {hi}; ++{index})",
                f"  {y} = {self.fn_names[first['fn_a']]}(aot::at(c, {line}), std::move({y}){rest}, "
                f"vm::Value::from_int({index}));"]

    def _expr(self, f: dict, operand, names: Names) -> str:
        frm, i = operand
        if frm == "reg":
            return names.of[i]
        if frm == "list":
            items = f["lists"][i]
            return "aot::list(" + ", ".join(names.of[j] if frm2 == "reg" else cpp_int(f["consts"][j][1])
                                            for frm2, j in items) + ")"
        what, v = f["consts"][i]
        return f"c.w.{self.weights.single(v)}" if what == "weight" else self.lits.ref(v)

    def _targets(self, f: dict, ins: dict, names: Names, value: str) -> list[str]:
        """`value` (an expression of the instruction's results) bound to its registers."""
        outs = ins["outs"]
        if not outs:
            return [f"{value};"]
        bound = [names.bind(f["reg_names"][r], r) for r in outs]
        if ins["pack_tuple"]:  # one name takes all k > 1 results as a tuple
            return [f"vm::Value {bound[0]} = aot::tuple({value});"]
        if len(outs) == 1:
            return [f"vm::Value {bound[0]} = {value};"]
        return [f"auto [{', '.join(bound)}] = {value};"]

    def _call_args(self, f: dict, args, names: Names) -> str:
        return "".join(", " + self._expr(f, a, names) for a in args)

    def _instruction(self, f: dict, ins: dict, names: Names, refs: set) -> list[str]:
        kind, line, args = ins["kind"], ins["line"], ins["args"]
        at = f"aot::at(c, {line})"
        if kind == "param":
            r = ins["outs"][0]
            refs.add(r)
            return [f"const vm::Value& {names.bind(f['reg_names'][r], r)} = aot::param(c, {line}, "
                    f"c.w.{self.weights.table(ins['table_template'])}, {self._expr(f, args[0], names)});"]
        if kind == "emit":
            return self._targets(f, ins, names, f"aot::emit(c, {line}{self._call_args(f, args, names)})")
        if kind == "while_loop":
            return self._while(f, ins, names)
        if kind == "cond":
            pred = self._expr(f, args[0], names)
            passed = self._call_args(f, args[1:], names)
            value = (f"aot::test(c, {line}, {pred}) ? {self.fn_names[ins['fn_a']]}({at}{passed}) : "
                     f"{self.fn_names[ins['fn_b']]}({at}{passed})")
            return self._targets(f, ins, names, value)
        if kind == "call":
            return self._targets(f, ins, names, f"{self.fn_names[ins['fn_a']]}({at}{self._call_args(f, args, names)})")
        if kind != "op":
            raise CompileError(f"line {line}: cannot write a {kind} instruction")
        op = ins["callee"]
        self.used_ops.setdefault(op, cpp_ident("op", op))
        slots = []
        for (frm, i), label in zip(args, ins["slot_params"]):
            text = self._expr(f, (frm, i), names)
            literal = frm == "const" and f["consts"][i][0] == "value"
            slots.append(f"/*{cpp_comment(label)}=*/{text}" if literal else text)
        call_args = "".join(", " + a for a in slots)
        n = ins["num_outputs"]
        call = f"aot::call(c, {line}, c.op.{self.used_ops[op]}{call_args})" if n == 1 else \
            f"aot::call_n<{n}>(c, {line}, c.op.{self.used_ops[op]}{call_args})"
        return self._targets(f, ins, names, call)

    def _while(self, f: dict, ins: dict, names: Names) -> list[str]:
        carried = ins["args"]
        k = len(carried)
        line = ins["line"]
        v = names.fresh(f"t_loop_{line}")
        items = ", ".join(f"{v}[{i}]" for i in range(k))
        moved = ", ".join(f"std::move({v}[{i}])" for i in range(k))
        at = f"aot::at(c, {line})"
        body = self.fn_names[ins["fn_b"]]
        step = f"{v} = {body}({at}, {moved});" if k > 1 else f"{v}[0] = {body}({at}, {moved});"
        lines = [f"std::array<vm::Value, {k}> {v}{{{', '.join(self._expr(f, a, names) for a in carried)}}};",
                 f"while (aot::loop(c, {line}, {self.fn_names[ins['fn_a']]}({at}, {items})))",
                 f"  {step}"]
        bound = [names.bind(f["reg_names"][r], r) for r in ins["outs"]]
        if ins["pack_tuple"]:
            lines.append(f"vm::Value {bound[0]} = aot::tuple(std::move({v}));")
        else:
            lines.append(f"auto& [{', '.join(bound)}] = {v};")
        return lines

    def _return(self, f: dict, ins: dict, names: Names) -> str:
        vals = [self._expr(f, a, names) for a in ins["args"]]
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
