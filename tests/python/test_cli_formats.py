"""`tensorvm run/replay` and `tensorvm-run` take the same files and options: .npz or
.safetensors inputs and outputs, arrays by name or arr_N, --arg, --ids. Also: a closed
stdout ends a command quietly, and the console scripts exist and pass everything through."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorvm
from marian_fixtures import hf
from readme_blocks import console_scripts
from tensorvm import Tensor
from tensorvm import ops as T
from tensorvm.pycompiler import weights_io
from tensorvm.pycompiler.cli import main

from pyc_helpers import requires_vm, tensorvm_run_tool


_tool = tensorvm_run_tool


@pytest.fixture
def program(tmp_path, rng):
    w = {"w": rng.standard_normal((4, 4)).astype(np.float32)}
    pb = tensorvm.ProgramBuilder(weights=w)

    @pb.function
    def forward(x: Tensor, scale: float, n: int) -> tuple[Tensor, int]:
        return T.mul(T.linear(x, T.param("w")), scale), T.add(n, 1)

    x = rng.standard_normal((2, 4)).astype(np.float32)
    return pb.save(tmp_path / "m.tvm"), x


def _write(path, arrays):
    if str(path).endswith(".npz"):
        np.savez(path, **arrays)
    else:
        weights_io.write(path, arrays, alignment=1)


def _read(path):
    if str(path).endswith(".npz"):
        with np.load(path) as d:
            return {k: d[k] for k in d.files}
    return {k: np.array(v) for k, v in weights_io.read(path)[0].items()}


def _cpp(*argv):
    return subprocess.run([_tool(), *map(str, argv)], capture_output=True, text=True, timeout=300)


@requires_vm
@pytest.mark.parametrize("fmt_in", [".npz", ".safetensors"])
@pytest.mark.parametrize("fmt_out", [".npz", ".safetensors"])
@pytest.mark.parametrize("naming", ["named", "positional"])
def test_both_clis_same_files(tmp_path, capsys, program, fmt_in, fmt_out, naming):
    path, x = program
    inputs = tmp_path / f"in{fmt_in}"
    if naming == "named":
        _write(inputs, {"x": x, "scale": np.array(0.5, np.float32)})
    else:
        _write(inputs, {"arr_0": x, "arr_1": np.array(0.5, np.float32)})
    py_out, cpp_out = tmp_path / f"py{fmt_out}", tmp_path / f"cpp{fmt_out}"
    code = main(["run", str(path), "forward", "--inputs", str(inputs), "--arg", "n=7", "--outputs", str(py_out)])
    assert code == 0, capsys.readouterr().err
    res = _cpp(path, "forward", "--inputs", inputs, "--arg", "n=7", "--outputs", cpp_out)
    assert res.returncode == 0, res.stderr
    got_py, got_cpp = _read(py_out), _read(cpp_out)
    assert sorted(got_py) == sorted(got_cpp) == ["arr_0", "arr_1"]
    np.testing.assert_array_equal(got_py["arr_0"], got_cpp["arr_0"])
    assert got_py["arr_1"].shape == got_cpp["arr_1"].shape == () and int(got_py["arr_1"]) == int(got_cpp["arr_1"]) == 8
    # Outputs feed back as inputs: arr_0 is x's position.
    assert main(["replay", str(path), "forward", "--inputs", str(py_out), "--arg", "scale=1", "--arg", "n=0"]) == 0


@pytest.mark.parametrize("make,match", [
    (lambda p: np.savez_compressed(p, x=np.ones(2)), "savez_compressed"),
    (lambda p: p.write_bytes(b"plain text, not arrays"), "neither an .npz"),
    (lambda p: np.savez(p, x=np.ones((2, 4), np.float32), scale=np.array(1.0), n=np.array(1), q=np.ones(1)),
     "array 'q' is no input of forward (name arrays arr_0, arr_1, ... or x, scale, n)"),
    (lambda p: np.savez(p, x=np.ones((2, 4), np.float32), arr_0=np.ones((2, 4), np.float32)),
     "array 'arr_0' is no input of forward"),
])
def test_same_errors_in_both(tmp_path, capsys, program, make, match):
    """Both command lines read --inputs with one code (cli/run_io.h), so they fail alike."""
    path, _ = program
    bad = tmp_path / "bad.npz"
    make(bad)
    code = main(["run", str(path), "forward", "--inputs", str(bad), "--arg", "scale=1", "--arg", "n=1"])
    err = capsys.readouterr().err
    res = _cpp(path, "forward", "--inputs", bad, "--arg", "scale=1", "--arg", "n=1")
    assert code == 1 and res.returncode == 1 and match in err, err
    assert err.removeprefix("tensorvm: error: ") == res.stderr.removeprefix("tensorvm-run: error: ")


def test_outputs_name_checked_before_running(tmp_path, capsys, program):
    path, x = program
    assert main(["run", str(path), "forward", "--arg", "scale=1", "--arg", "n=1", "--outputs", str(tmp_path / "o.txt")]) == 1
    assert "must end in .npz or .safetensors" in capsys.readouterr().err


@requires_vm
def test_ids_and_args_agree_on_marian(tmp_path, capsys):
    out = tmp_path / "m.tvm"
    tensorvm.import_hf(hf.checkpoint_dir("tiny-untied"), out)
    opts = ["--ids", "5 6 7 0; 8 9 0", "--arg", "max_new_tokens=6", "--arg", "num_beams=2"]
    assert main(["run", str(out), "generate", *opts, "--outputs", str(tmp_path / "py.npz")]) == 0
    res = _cpp(out, "generate", *opts, "--outputs", tmp_path / "cpp.npz")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(_read(tmp_path / "py.npz")["arr_0"], _read(tmp_path / "cpp.npz")["arr_0"])


@pytest.mark.parametrize("argv", [["ops"], ["ops", "--json"], ["inspect", "{prog}", "--ir"], ["inspect", "{prog}"]])
def test_closed_stdout_is_quiet(program, argv):
    """`tensorvm ... | head`: the reader is gone before the first write."""
    path, _ = program
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", *[a.format(prog=path) for a in argv]],
                             stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert res.returncode == 141 and res.stderr == ""


def test_console_scripts_resolve():
    import importlib

    scripts = console_scripts()
    assert set(scripts) >= {"tensorvm", "tensorvm-run"}
    for name, target in scripts.items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), name


def test_launcher_passes_arguments_and_status_through(tmp_path):
    _tool()
    launch = [sys.executable, "-m", "tensorvm.pycompiler.launch"]
    res = subprocess.run([*launch, "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("usage: tensorvm-run")
    res = subprocess.run([*launch, str(tmp_path / "none.tvm"), "f", "--arg", "a b=c d"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 1 and "none.tvm" in res.stderr
    res = subprocess.run([*launch, "only-one-argument"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.startswith("usage:")


def test_top_level_api():
    for name in ("load", "import_hf", "replay", "export", "ProgramBuilder", "get_cmake_dir", "get_include_dir"):
        assert name in tensorvm.__all__ and callable(getattr(tensorvm, name)), name
    from tensorvm.pycompiler.import_hf import import_hf

    assert tensorvm.import_hf is import_hf


def test_installed_console_scripts_on_path():
    """After `pip install .`: the scripts pip wrote run this package's commands."""
    import importlib.metadata
    from pathlib import Path

    try:
        dist = importlib.metadata.distribution("tensorvm")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("tensorvm is not pip-installed (a development tree)")
    if Path(dist.locate_file("tensorvm")).resolve() != Path(tensorvm.__file__).parent.resolve():
        pytest.skip(f"the pip-installed tensorvm ({dist.locate_file('tensorvm')}) is not the one under test")
    scripts = {Path(str(f)).name: Path(dist.locate_file(f)).resolve() for f in dist.files or []
               if Path(str(f)).name in console_scripts() and Path(str(f)).parent.name == "bin"
               and Path(str(f)).parent.parent.name != "tensorvm"}
    assert set(scripts) == set(console_scripts()), scripts
    for name, path in scripts.items():
        if not path.is_file():  # `pip install --target T` puts them in T/bin; RECORD keeps the scheme's path
            scripts[name] = Path(dist.locate_file("")) / "bin" / name
        assert scripts[name].is_file(), f"{name}: not at {path}"
    res = subprocess.run([str(scripts["tensorvm-run"]), "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("usage: tensorvm-run")
    res = subprocess.run([str(scripts["tensorvm"]), "--cmake-dir"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == tensorvm.get_cmake_dir()
