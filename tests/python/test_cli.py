"""The `tensorvm` command: run, replay, inspect, ops; errors as one line on stderr."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor
from tensorvm import ops as T
from tensorvm.pycompiler.cli import main

from pyc_helpers import reference_fallbacks, requires_vm, run_main  # noqa: F401 (fixture)


@pytest.fixture
def program(tmp_path, rng):
    w = {f"l.{i}.w": rng.standard_normal((4, 4)).astype(np.float32) for i in range(2)}
    w["b"] = rng.standard_normal(4).astype(np.float32)
    pb = tensorvm.ProgramBuilder(weights=w, meta={"model": "cli-test"})

    @pb.function
    def layer(x: Tensor, i: int) -> Tensor:
        return T.linear(x, T.param("l.{}.w", i), T.param("b"))

    @pb.function
    def forward(x: Tensor, scale: float, n: int) -> tuple[Tensor, int]:
        y = layer(layer(x, 0), 1)
        return T.mul(y, scale), T.add(n, 1)

    path = pb.save(tmp_path / "m.tvm")
    x = rng.standard_normal((2, 4)).astype(np.float32)
    want = (((x @ w["l.0.w"].T + w["b"]) @ w["l.1.w"].T + w["b"]) * 0.5, 8)
    return path, x, want


@requires_vm
@pytest.mark.parametrize("command", ["run", "replay"])
@pytest.mark.parametrize("named", [False, True])
def test_run_and_replay(tmp_path, capsys, program, command, named, reference_fallbacks):
    path, x, (y, n) = program
    inputs = tmp_path / "in.npz"
    if named:
        np.savez(inputs, x=x, scale=np.array(0.5), n=np.array(7))
    else:
        np.savez(inputs, x, np.array(0.5, np.float32), np.array(7))
    outputs = tmp_path / "out.npz"
    code, out, err = run_main(capsys, command, path, "forward", "--inputs", inputs, "--outputs", outputs)
    assert (code, err) == (0, "")
    with np.load(outputs) as got:
        assert sorted(got.files) == ["arr_0", "arr_1"]
        np.testing.assert_allclose(got["arr_0"], y, rtol=1e-5, atol=1e-5)
        assert got["arr_1"].shape == () and int(got["arr_1"]) == n


@requires_vm
def test_run_prints_outputs_without_outputs_file(tmp_path, capsys, program):
    path, x, _ = program
    np.savez(tmp_path / "in.npz", x=x, scale=np.array(2.0), n=np.array(1))
    code, out, err = run_main(capsys, "run", path, "forward", "--inputs", tmp_path / "in.npz", "--threads", 2)
    assert code == 0 and out.startswith("arr_0: float32[2, 4]\n") and "arr_1: 2" in out


def test_inspect(capsys, program):
    path, _, _ = program
    code, out, err = run_main(capsys, "inspect", path)
    assert code == 0, err
    assert "format tensorvm-ir version 1" in out
    assert 'meta: {"model": "cli-test"}' in out
    assert "  layer(x: Tensor, i: int) -> Tensor\n    3 instructions: param 2, linear 1" in out
    assert "  forward(x: Tensor, scale: float, n: int) -> tuple[Tensor, int]\n    4 instructions: layer 2, add 1, mul 1" in out
    assert "weights (3, 144 bytes = 144 B):" in out
    assert "l.0.w  F32  [4, 4]           64 bytes" in out
    code, out, _ = run_main(capsys, "inspect", path, "--ir")
    assert code == 0 and out == (path / "program.py").read_text()


def test_ops(capsys):
    code, out, _ = run_main(capsys, "ops")
    assert code == 0 and "linear(x: Tensor, weight: Tensor, bias: Tensor? = None) -> Tensor" in out
    code, out, _ = run_main(capsys, "ops", "--json")
    rows = json.loads(out)
    lin = next(r for r in rows if r["name"] == "linear")
    assert lin["params"][2] == {"name": "bias", "kind": "Tensor?", "variadic": False, "has_default": True, "default": None}


@pytest.mark.parametrize("argv,match", [
    (["inspect", "{tmp}/nope"], "not a program directory"),
    (["run", "{prog}", "nope"], "no function 'nope'"),
    (["run", "{prog}", "forward"], "give it with --arg x=..., --inputs or --ids"),
    (["run", "{prog}", "forward", "--inputs", "{tmp}/missing.npz"], "No such file or directory"),
    (["run", "{prog}", "forward", "--inputs", "{tmp}/bad.npz"], "no value for input 'x' (Tensor) of forward"),
    (["run", "{prog}", "forward", "--inputs", "{tmp}/vec.npz"], "declared float: give a 0-d array"),
    (["run", "{prog}", "forward", "--inputs", "{tmp}/notnpz.npz"], "neither an .npz (numpy.savez) nor a .safetensors file"),
])
def test_errors_are_one_line(tmp_path, capsys, program, argv, match):
    path, x, _ = program
    np.savez(tmp_path / "bad.npz", q=x)
    np.savez(tmp_path / "vec.npz", x, np.ones(2), np.array(1))
    (tmp_path / "notnpz.npz").write_text("hello")
    code, out, err = run_main(capsys, *[a.format(tmp=tmp_path, prog=path) for a in argv])
    assert code == 1 and out == ""
    assert err.startswith("tensorvm: error: ") and err.count("\n") == 1, err
    assert match in err


@requires_vm
def test_vm_error_is_one_line(tmp_path, capsys, program):
    path, x, _ = program
    np.savez(tmp_path / "in.npz", np.ones((2, 3), np.float32), np.array(1.0), np.array(1))
    code, out, err = run_main(capsys, "run", path, "forward", "--inputs", tmp_path / "in.npz")
    assert code == 1 and err.count("\n") == 1
    assert "linear: x has 3 features" in err and "program.py:" in err


def test_debug_shows_traceback(tmp_path, capsys):
    with pytest.raises(Exception, match="not a program directory"):
        main(["--debug", "inspect", str(tmp_path / "nope")])
    with pytest.raises(Exception, match="not a program directory"):
        main(["inspect", str(tmp_path / "nope"), "--debug"])


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["frobnicate"])
    assert e.value.code == 2


def test_module_entry_point(tmp_path, program):
    path, _, _ = program
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "inspect", str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0 and "functions (2):" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "inspect", str(tmp_path / "x")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and r.stderr.startswith("tensorvm: error:") and "Traceback" not in r.stderr
