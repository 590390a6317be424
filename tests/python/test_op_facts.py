"""The op registry is the one source of facts about ops: how the tracer types an
"Any" output (OpDef::result) and which ops exist to fail (OpDef::raises). Every op
states both, and the Python side keeps no op-name table of its own."""
import ast
from pathlib import Path

from tensorvm import _C
from tensorvm.pycompiler import registry
from tensorvm.pycompiler.passes import effects

PYCOMPILER = Path(__file__).resolve().parents[2] / "pycompiler"
RULES = {"declared", "promote", "bool", "float", "scalar", "first_arg"}

# Op names that Python code may list together because they are not facts about the
# ops: which op carries a literal through a loop, transformers' activation names, and
# the values linear_act's `activation` argument takes.
ALLOWED_TABLES = {
    ("control.py", ("eq", "logical_and")),
    ("models/layers.py", ("gelu", "relu", "silu", "tanh")),
    ("passes/fuse.py", ("gelu", "relu", "sigmoid", "silu")),
}


def test_every_op_states_its_result_rule_and_whether_it_raises():
    ops = _C.registry()
    assert ops
    for d in ops:
        assert d["result"] in RULES, d["name"]
        assert isinstance(d["raises"], bool), d["name"]
        # An "Any" output is typed by its rule; a rule elsewhere would be a fact nobody reads.
        assert ("Any" in d["outputs"]) == (d["result"] != "declared"), d["name"]
    by_name = {d["name"]: d for d in ops}
    assert {n for n, d in by_name.items() if d["raises"]} == {"check", "option_index"}
    assert by_name["div"]["result"] == "float" and by_name["eq"]["result"] == "bool"


def test_passes_keep_the_ops_the_registry_marks_raising():
    pure = effects.pure_ops()
    raising = {name for name, spec in registry.ops().items() if spec.raises}
    assert raising == {"check", "option_index"}
    assert not raising & pure
    assert {"add", "eq", "item", "if_none"} <= pure


def _op_name_tables(names: set) -> list:
    """(file, sorted op names) for every literal collection naming two or more ops."""
    found = []
    for path in sorted(PYCOMPILER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if not isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)) or elts is None:
                continue
            hits = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in names}
            if len(hits) >= 2:
                found.append((path.relative_to(PYCOMPILER).as_posix(), tuple(sorted(hits))))
    return found


def test_python_keeps_no_op_name_table_of_its_own():
    names = {d["name"] for d in _C.registry()}
    tables = [t for t in _op_name_tables(names) if t not in ALLOWED_TABLES]
    assert tables == [], "op facts belong in OpDef (ops/registry.h), not in Python tables"
