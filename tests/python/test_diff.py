"""The numerics debugger: an error injected into one instruction is found, with its
line, and nothing before it is blamed; two programs are aligned by SSA name."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference
from tensorvm.pycompiler.cli import main
from tensorvm.pycompiler.diff import compare
from tensorvm.pycompiler.program_dir import write_program_dir

from pyc_helpers import LOOP_FUNCTIONS, requires_vm

pytestmark = requires_vm

TEXT = LOOP_FUNCTIONS + """
def main(x: Tensor, n: int) -> tuple[Tensor, Tensor]:
    mul_0 = mul(x, 0.5)
    w_0, w_1, w_2 = while_loop(more, step, 0, n, mul_0)
    exp_0 = exp(w_2)
    sum_0 = sum(exp_0, [1])
    return w_2, sum_0
"""


@pytest.fixture
def weights(rng):
    return {"w": (rng.standard_normal((8, 8)) / 3).astype(np.float32)}


@pytest.fixture
def program(tmp_path, weights):
    return write_program_dir(tmp_path / "a.tvm", TEXT, weights, {})


@pytest.fixture
def x(rng):
    return rng.standard_normal((3, 8)).astype(np.float32)


def test_vm_matches_its_replay(program, x):
    report = tensorvm.diff(program, "main", x, 3)
    assert report.first is None and "no instruction past the tolerance" in report.first_report()
    # every result of every executed instruction but return and param, in execution order
    names = [(r.function, r.name, r.occurrence) for r in report.rows]
    assert names[:2] == [("main", "mul_0", 0), ("more", "lt_0", 0)]
    assert names.count(("step", "linear_0", 2)) == 1 and ("step", "linear_0", 3) not in names
    assert [r.name for r in report.rows if r.function == "main"] == ["mul_0", "w_0", "w_1", "w_2", "exp_0", "sum_0"]
    assert not report.only_left and not report.only_right


def test_an_error_injected_into_the_reference_is_found(program, x, monkeypatch):
    """The replay's tanh departs on its second call: that instruction is the first past the tolerance."""
    real = reference.OPS["tanh"]
    calls = []

    def bad_tanh(v):
        calls.append(1)
        out = real(v)
        if len(calls) == 2:
            out = out.copy()
            out[1, 5] += 0.01
        return out

    monkeypatch.setitem(reference.OPS, "tanh", bad_tanh)
    report = tensorvm.diff(program, "main", x, n=3)
    first = report.first
    assert (first.function, first.line, first.name, first.occurrence) == ("step", 10, "tanh_0", 1)
    assert first.text == "tanh_0 = tanh(linear_0)"
    assert first.max_abs == pytest.approx(0.01, rel=1e-3)
    assert first.worst == ((), 1 * 8 + 5)
    i = report.first_index
    assert all(r.ok for r in report.rows[:i])
    text = report.first_report()
    assert "first past tolerance: step:10  tanh_0 = tanh(linear_0)" in text
    assert "flat index 13" in text and "instructions around it:" in text
    # it spreads: the next linear departs too, the loop's result carries it
    assert not next(r for r in report.rows[i + 1:] if r.name == "linear_0").ok
    assert not next(r for r in report.rows if r.name == "sum_0").ok


def test_two_programs_aligned_by_name(tmp_path, program, weights, x):
    """A copy whose exp is scaled departs at that line; with a renamed quantized-style
    linear it still aligns."""
    changed = TEXT.replace("exp_0 = exp(w_2)", "mul_1 = mul(w_2, 1.001)\n    exp_0 = exp(mul_1)")
    changed = changed.replace("linear_0", "linear_w8a8_0")
    b = write_program_dir(tmp_path / "b.tvm", changed, weights, {})
    report = tensorvm.diff(program, "main", x, 2, other=b)
    assert report.left == "a.tvm" and report.right == "b.tvm"
    first = report.first
    assert (first.function, first.name, first.line) == ("main", "exp_0", 16)
    assert all(r.ok for r in report.rows[:report.first_index])
    lin = [r for r in report.rows if r.name == "linear_0"]
    assert len(lin) == 2 and all(r.ok and r.max_abs == 0 for r in lin)
    assert report.only_right == [("main", "mul_1", 0)]
    report = tensorvm.diff(program, "main", x, 2, other=b, rtol=0.1)
    assert report.first is None


def test_compare_rules():
    inf = np.float32(np.inf)
    a = np.array([1.0, -inf, np.nan, 2.0], np.float32)
    assert compare(a, a.copy(), 0, 0)[:3] == (0.0, 0.0, True)
    max_abs, max_rel, ok, note, shape, worst = compare(a + np.array([0, 0, 0, 0.5], np.float32), a, 1e-3, 0)
    assert (max_abs, max_rel, ok, worst) == (0.5, 0.25, False, ((), 3))
    assert compare(np.zeros((2, 3)), np.zeros((3, 2)), 1, 1)[3] == "shape [2, 3] vs [3, 2]"
    assert compare((1, np.ones(2)), (1, np.ones(2) * 2), 0.1, 0)[5] == ((1,), 0)
    assert compare(3, 4, 0, 0)[:3] == (1.0, 0.25, False)


def test_cli_diff(program, tmp_path, capsys, x):
    np.savez(tmp_path / "in.npz", x=x)
    code = main(["diff", str(program), "main", "--inputs", str(tmp_path / "in.npz"), "--arg", "n=2", "--all"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.startswith("vm vs replay: ") and "0 past tolerance" in out and "step:9" in out
    code = main(["diff", str(program), "--arg", "n=2"])
    assert code == 1 and "diff takes PROGRAM FUNCTION" in capsys.readouterr().err


def test_marian_generate_vm_against_replay_and_w8a8(tmp_path):
    """A whole beam-search generate of an imported model: the VM agrees with its replay
    everywhere, and its w8a8 import aligns with it name for name."""
    from marian_fixtures import hf, imported

    _, prog = imported("tiny-marian", tmp_path)
    ids = np.array([[5, 6, 7, 8, 0], [9, 10, 0, 1, 1]])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    report = tensorvm.diff(prog, "generate", ids, mask, num_beams=2, max_new_tokens=3)
    assert report.first is None and len(report.rows) > 500
    assert any(r.note.endswith("(not compared)") for r in report.rows)  # the cache and the generator
    # Without the graph passes: the float program would fuse silu(linear) into linear_act,
    # which linear_w8a8 has no counterpart of, and the names would not align there.
    ckpt = hf.checkpoint_dir("tiny-marian")
    f32 = tensorvm.import_hf(ckpt, tmp_path / "f32.tvm", optimize=False)
    w8 = tensorvm.import_hf(ckpt, tmp_path / "w8.tvm", quantize="w8a8", optimize=False)
    report = tensorvm.diff(f32, "encode", ids, mask, other=w8, rtol=0.5)
    linears = [r for r in report.rows if r.op == "linear"]
    assert linears and all(r.note == "linear vs linear_w8a8" for r in linears)
    assert not report.only_left and not report.only_right
    assert max(r.max_abs for r in linears) > 0  # quantized: not the same numbers
