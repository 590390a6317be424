"""Selective build (docs/runtime.md "Selective build"): `tensorvm selective-build` lists
the ops of some programs, and a runtime built from that list holds only those ops,
runs the programs as the full one does and refuses a program needing another op."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorvm.pycompiler import cli
from tensorvm.pycompiler.import_hf import import_hf
from tensorvm.pycompiler.program_dir import write_program_dir
from tensorvm.pycompiler.selective import OPS_FILE, builtin_ops, select_ops

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf_reference as hf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

TANH = """# tensorvm ir 1
def main(x: Tensor) -> Tensor:
    y = neg(x)
    z = tanh(y)
    return z
"""


def _listed(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """A small Marian checkpoint imported as f32 and as w8a8."""
    root = tmp_path_factory.mktemp("selective")
    ckpt = hf.checkpoint_dir("tiny-marian")
    return {q: import_hf(ckpt, root / f"marian-{q}.tvm", quantize=None if q == "f32" else q) for q in ("f32", "w8a8")}


def test_every_op_is_registered_through_the_selection_macro():
    """Registry::add takes only an OpEntry, made by TENSORVM_OP (ops/select.h) from a
    literal name, so a selective build can leave the op out. Each op file must name
    each built-in op once that way: an op registered any other way would be built into
    every selective runtime, whatever its list says."""
    names = []
    for src in sorted((ROOT / "ops").glob("*.cpp")):
        text = src.read_text()
        assert "OpEntry{" not in text, f"{src.name} builds an OpEntry by hand; use TENSORVM_OP"
        assert "register_op(" not in text or src.name == "registry.cpp", f"{src.name} calls register_op"
        names += re.findall(r'TENSORVM_OP\("(\w+)"', text)
    assert len(names) == len(set(names)), "an op is named twice"
    assert sorted(names) == sorted(builtin_ops()), \
        "the built-in ops differ from those named with TENSORVM_OP in ops/*.cpp"


def test_ops_come_from_every_function(marian, tmp_path):
    f32 = select_ops([str(marian["f32"])])
    both = select_ops([str(marian["f32"]), str(marian["w8a8"])])
    assert {"linear", "attention", "kv_append", "topk", "add_layer_norm"} <= set(f32.ops)  # post-LN: all fused
    assert "linear_w8a8" not in f32.ops and "linear_w8a8" in both.ops
    assert "conv1d" not in both.ops and "tanh" not in both.ops
    assert not both.app_ops and both.builtin_count == len(builtin_ops())
    # an op the registry lacks is the app's, not part of the list
    app = write_program_dir(tmp_path / "app.tvm", TANH.replace("tanh(y)", "my_op(y)"), {}, {})
    sel = select_ops([str(app)])
    assert sorted(sel.ops) == ["neg"] and list(sel.app_ops) == ["my_op"]


def test_cli_writes_the_list_and_a_cmake_project(marian, tmp_path, capsys):
    out = tmp_path / "sel"
    # --source: a pip-installed package (CI) runs from no source tree
    assert cli.main(["selective-build", str(marian["f32"]), str(marian["w8a8"]), "-o", str(out), "--source",
                     str(ROOT)]) == 0
    listed = _listed(out / OPS_FILE)
    assert listed == sorted(select_ops([str(marian["f32"]), str(marian["w8a8"])]).ops)
    cmake = (out / "CMakeLists.txt").read_text()
    assert f'TENSORVM_SOURCE_DIR "{ROOT}"' in cmake and "TENSORVM_SELECTED_OPS" in cmake
    assert f"{len(listed)} of {len(builtin_ops())} ops" in capsys.readouterr().out
    assert cli.main(["selective-build", "-o", str(out), str(tmp_path / "missing.tvm")]) == 1
    assert cli.main(["selective-build", str(marian["f32"]), "-o", str(out), "--kernel-variants", "avx2,neon",
                     "--source", str(ROOT)]) == 0
    assert 'set(TENSORVM_KERNEL_VARIANTS "avx2;neon" CACHE' in (out / "CMakeLists.txt").read_text()
    assert cli.main(["selective-build", str(marian["f32"]), "-o", str(out), "--kernel-variants", "avx2;x",
                     "--source", str(ROOT)]) == 1


def test_a_hostile_program_path_stays_in_its_comment(tmp_path):
    """Issue 25: the programs' paths reach CMakeLists.txt and ops.txt only as comment text
    (pycompiler/escape.py), so a directory name holding a newline runs nothing."""
    sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
    from aot_check import check_cmake

    prog = tmp_path / 'm\nexecute_process(COMMAND touch PWN1)\n# ${X} "q" \\ \u202e.tvm'
    write_program_dir(prog, TANH, {}, {"format": "tensorvm-ir", "version": 1})
    out = tmp_path / "sel"
    assert cli.main(["selective-build", str(prog), "-o", str(out), "--source", str(ROOT)]) == 0
    check_cmake("CMakeLists.txt", (out / "CMakeLists.txt").read_text(), "", set())
    assert _listed(out / OPS_FILE) == ["neg", "tanh"]


def _run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1800, **kw)


def _full_run() -> Path:
    from tensorvm.pycompiler.locations import get_tensorvm_run

    return Path(get_tensorvm_run())


@pytest.mark.skipif(not shutil.which("cmake") or not shutil.which("ninja"), reason="needs cmake and ninja")
def test_selective_runtime_runs_marian_and_refuses_other_ops(marian, tmp_path):
    """Builds tensorvm-run for the f32 + w8a8 Marian programs, then: it holds exactly
    the listed ops, generates the same tokens as the full runtime, and refuses a program
    calling an op left out, naming the op and the IR line. The build stays in
    build/selective-test (TENSORVM_SELECTIVE_BUILD_DIR), so a rerun only rebuilds what
    changed; ccache shares the rest between checkouts."""
    out = Path(os.environ.get("TENSORVM_SELECTIVE_BUILD_DIR", ROOT / "build" / "selective-test"))
    # --source: a pip-installed package (CI) runs from no source tree
    assert cli.main(["selective-build", str(marian["f32"]), str(marian["w8a8"]), "-o", str(out), "--source",
                     str(ROOT)]) == 0
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    res = _run(["cmake", "-S", out, "-B", out / "build", "-G", "Ninja", *launcher])
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(["cmake", "--build", out / "build", "--target", "tensorvm-run"])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "warning" not in res.stdout.lower(), res.stdout[-3000:]
    small = out / "build" / "tensorvm" / "tensorvm-run"

    res = _run([small, "--ops"])
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split()) == _listed(out / OPS_FILE)

    ids = "5 17 9 33 0; 30 8 0"
    for q, program in marian.items():
        for beams in (1, 4):
            outs = {}
            for label, exe in (("full", _full_run()), ("selective", small)):
                outs[label] = tmp_path / f"{q}-{beams}-{label}.npz"
                res = _run([exe, program, "generate", "--ids", ids, "--arg", "max_new_tokens=12", "--arg",
                            f"num_beams={beams}", "--outputs", outs[label]])
                assert res.returncode == 0, f"{label} {q}: {res.stderr}"
            full, sel = np.load(outs["full"]), np.load(outs["selective"])
            np.testing.assert_array_equal(sel["arr_0"], full["arr_0"], err_msg=f"{q} num_beams={beams}")

    other = write_program_dir(tmp_path / "tanh.tvm", TANH, {}, {})
    res = _run([small, other, "main", "--inputs", _zeros(tmp_path)])
    assert res.returncode == 1
    assert re.search(r"program\.py:4: op 'tanh' is not in this runtime: it is a selective build", res.stderr), res.stderr
    res = _run([_full_run(), other, "main", "--inputs", _zeros(tmp_path)])
    assert res.returncode == 0, res.stderr


def _zeros(tmp_path) -> Path:
    path = tmp_path / "x.npz"
    np.savez(path, x=np.zeros((2, 3), np.float32))
    return path
