"""`tensorvm inspect PROGRAM --dot FUNCTION`: one function as a Graphviz graph."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from tensorvm.pycompiler.cli import main
from tensorvm.pycompiler.program_dir import write_program_dir

TEXT = """# tensorvm ir 1
def more(i: int, x: Tensor) -> bool:
    lt_0 = lt(i, 3)
    return lt_0

def step(i: int, x: Tensor) -> tuple[int, Tensor]:
    add_0 = add(i, 1)
    tanh_0 = tanh(x)
    return add_0, tanh_0

def main(x: Tensor, label: str) -> Tensor:
    w = param("layer \\"0\\".w")
    linear_0 = linear(x, w)
    loop_0, loop_1 = while_loop(more, step, 0, linear_0)
    add_0 = add(loop_1, linear_0)
    return add_0
"""


@pytest.fixture
def program(tmp_path):
    return write_program_dir(tmp_path / "g.tvm", TEXT, {'layer "0".w': np.ones((2, 2), np.float32)}, {})


def test_dot_nodes_and_edges(program, capsys):
    assert main(["inspect", str(program), "--dot", "main"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "main" {') and out.endswith("}\n")
    nodes = dict(re.findall(r'^  (\w+) \[.*?label="((?:[^"\\]|\\.)*)"\];$', out, re.M))
    assert nodes["p0"] == "x: Tensor" and nodes["p1"] == "label: str"
    assert nodes["s0"] == 'w = param\\nlayer \\"0\\".w  :12'
    assert nodes["s2"] == "loop_0, loop_1 = while_loop(more, step)  :14"
    assert nodes["s4"] == "return"
    edges = set(re.findall(r"^  (\w+) -> (\w+) \[label=\"(\w+)\"\];$", out, re.M))
    assert edges == {("p0", "s1", "x"), ("s0", "s1", "w"), ("s1", "s2", "linear_0"), ("s2", "s3", "loop_1"),
                     ("s1", "s3", "linear_0"), ("s3", "s4", "add_0")}
    if shutil.which("dot"):  # the graph is valid Graphviz
        subprocess.run(["dot", "-Tsvg"], input=out, text=True, check=True, capture_output=True)


def test_dot_of_an_unknown_function(program, capsys):
    assert main(["inspect", str(program), "--dot", "nope"]) == 1
    assert "no function 'nope'" in capsys.readouterr().err
