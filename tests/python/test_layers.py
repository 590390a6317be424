"""pycompiler's modules import downward only: no module reaches, at import time or
from inside a function, a module that imports it back (docs/python.md, "Modules")."""
import ast

from pyc_helpers import REPO

PACKAGE = REPO / "pycompiler"


def _module_name(path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["pycompiler", *parts])


def _known_modules() -> dict:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path, known) -> set:
    """The package's modules that `path` imports, wherever the import statement stands."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue  # absolute imports leave the package (numpy, torch, ...)
        base = package.split(".")
        base = base[:len(base) - (node.level - 1)]
        if not base:
            continue  # `from .. import _C`: the tensorvm package, not pycompiler
        stem = ".".join(base + ([node.module] if node.module else []))
        for alias in node.names:
            sub = f"{stem}.{alias.name}"
            target = sub if sub in known else stem
            if target in known and target != me:
                out.add(target)
    return out


def _cycle(graph: dict):
    """One import cycle as a list of modules, or None."""
    color = dict.fromkeys(graph, 0)
    for root in graph:
        if color[root]:
            continue
        color[root], stack = 1, [(root, iter(sorted(graph[root])))]
        while stack:
            node, edges = stack[-1]
            nxt = next(edges, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
            elif color[nxt] == 1:
                path = [n for n, _ in stack]
                return path[path.index(nxt):] + [nxt]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))
    return None


def test_the_checker_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_pycompiler_imports_downward_only():
    known = _known_modules()
    assert {"pycompiler.builder", "pycompiler.tracing", "pycompiler.program"} <= set(known)
    graph = {m: _imports(p, known) for m, p in known.items()}
    assert ("pycompiler.replay" in graph["pycompiler.program"]) and graph["pycompiler.ir"] == {"pycompiler.literals"}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
