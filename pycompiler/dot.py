"""One function of a program as a Graphviz graph (`tensorvm inspect PROGRAM --dot FUNCTION`).

Nodes are the function's parameters, its statements (the op or callee, the names it
defines and its line) and its return; an edge runs from the statement that defines a
name to each statement that reads it, labelled with the name. Literal arguments are
not nodes. Weights read by `param` are drawn as notes, calls to program functions
(and `while_loop`/`cond`, which name functions) with a double border.
"""
from __future__ import annotations

from . import ir


def _quote(s: str) -> str:
    # Graphviz escapes backslashes and quotes, and writes a line break as backslash-n.
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _uses(s) -> list[str]:
    exprs = list(s.values) if isinstance(s, ir.Return) else list(s.args) + [v for _, v in s.kwargs]
    out = []
    for e in exprs:
        if isinstance(e, ir.Name):
            out.append(e.id)
        elif isinstance(e, ir.IntList):
            out += [i.id for i in e.items if isinstance(i, ir.Name)]
    return out


def function_dot(module: ir.Module, name: str) -> str:
    fn = module.function(name)
    functions = set(module.function_names)
    lines = [f"digraph {_quote(fn.name)} {{", "  rankdir=TB;",
             '  node [fontname="monospace", fontsize=10];', '  edge [fontname="monospace", fontsize=9];']
    defined: dict[str, str] = {}
    for i, p in enumerate(fn.params):
        node = f"p{i}"
        lines.append(f"  {node} [shape=ellipse, label={_quote(f'{p.name}: {p.type}')}];")
        defined[p.name] = node
    for i, s in enumerate(fn.body):
        node = f"s{i}"
        if isinstance(s, ir.Return):
            lines.append(f"  {node} [shape=ellipse, style=bold, label={_quote('return')}];")
        else:
            if s.callee == "param":
                weight = s.args[0] if s.args and isinstance(s.args[0], str) else "?"
                label = f"{', '.join(s.targets)} = param\n{weight}"
                shape = "note"
            else:
                called = [a.id for a in s.args if isinstance(a, ir.Name) and a.id in functions]
                label = f"{', '.join(s.targets)} = {s.callee}" + (f"({', '.join(called)})" if called else "")
                shape = "box, peripheries=2" if s.callee in functions or called else "box"
            lines.append(f"  {node} [shape={shape}, label={_quote(label + f'  :{s.line}')}];")
        for used in dict.fromkeys(_uses(s)):
            if used in defined:
                lines.append(f"  {defined[used]} -> {node} [label={_quote(used)}];")
        if isinstance(s, ir.Assign):
            for t in s.targets:
                defined[t] = node
    lines.append("}")
    return "\n".join(lines) + "\n"
