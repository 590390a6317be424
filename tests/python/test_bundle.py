"""Bundled checks (docs/runtime.md "Bundled checks"): `tensorvm bundle` stores example
inputs and the outputs they give in the program directory; `tensorvm-run PROGRAM
verify` reruns them, prints each output's error and fails past tolerance."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorvm.pycompiler import cli
from tensorvm.pycompiler.import_hf import import_hf
from tensorvm.pycompiler.locations import get_tensorvm_run
from tensorvm.pycompiler.program_dir import write_program_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf_reference as hf  # noqa: E402

FLOATS = """# tensorvm ir 1
def main(x: Tensor, scale: float, k: int) -> tuple[Tensor, Tensor, int]:
    w = param("w")
    y = linear(x, w)
    z = mul(y, scale)
    m = argmax(z, -1)
    n = add(k, 1)
    return z, m, n
"""


def _verify(program, *extra):
    return subprocess.run([get_tensorvm_run(), str(program), "verify", *extra], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture
def program(tmp_path):
    rng = np.random.default_rng(3)
    prog = write_program_dir(tmp_path / "p.tvm", FLOATS, {"w": rng.standard_normal((5, 4)).astype(np.float32)}, {})
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((3, 4)).astype(np.float32))
    assert cli.main(["bundle", str(prog), "main", "--inputs", str(tmp_path / "in.npz"), "--arg", "scale=0.5",
                     "--arg", "k=6", "--atol", "1e-5"]) == 0
    return prog


def _arrays(program):
    manifest = json.loads((program / "bundle.json").read_text())
    return manifest, program / manifest["cases"][-1]["arrays"]


def test_bundle_then_verify_passes(program):
    manifest, _ = _arrays(program)
    case = manifest["cases"][0]
    assert case["function"] == "main"
    assert [o.get("compare") for o in case["outputs"]] == ["close", "exact", "exact"]
    assert case["outputs"][0]["atol"] == 1e-5
    res = _verify(program)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("verify: case 0 main output 0: F32 [3, 5]: max error ")
    assert lines[1] == "verify: case 0 main output 1: I64 [3]: exact, equal"
    assert lines[2] == "verify: case 0 main output 2: I64 []: exact, equal"
    assert lines[3].startswith("verify: passed: 3 outputs of 1 cases")


def _corrupt(program, key, change):
    from safetensors.numpy import load_file, save_file

    _, path = _arrays(program)
    arrays = load_file(str(path))
    arrays[key] = change(arrays[key].copy())
    save_file(arrays, str(path))


def test_a_float_output_past_tolerance_fails(program):
    def nudge(a):
        a[1, 2] += 0.01
        return a

    _corrupt(program, "expected.0", nudge)
    res = _verify(program)
    assert res.returncode == 1
    out = res.stdout.splitlines()
    assert out[0].startswith("verify: case 0 main output 0: F32 [3, 5]: max error 0.01") and out[0].endswith("FAIL")
    assert "1 of 15 values past tolerance (first at flat index 7" in out[0]
    assert out[1].endswith("exact, equal")  # the other outputs are still reported
    assert out[-1].startswith("verify: FAILED: 1 of 3 outputs past tolerance")


def test_an_integer_output_must_match_exactly(program):
    def bump(a):
        a[0] += 1
        return a

    _corrupt(program, "expected.1", bump)
    res = _verify(program)
    assert res.returncode == 1
    assert "output 1: I64 [3]: exact: 1 of 3 values differ (first at flat index 0" in res.stdout


def test_bundles_append_and_replace(program, tmp_path):
    np.savez(tmp_path / "in2.npz", x=np.ones((1, 4), np.float32))
    assert cli.main(["bundle", str(program), "main", "--inputs", str(tmp_path / "in2.npz"), "--arg", "scale=2.0",
                     "--arg", "k=1"]) == 0
    manifest, _ = _arrays(program)
    assert len(manifest["cases"]) == 2
    assert len(list(program.glob("bundle-*.safetensors"))) == 2
    res = _verify(program)
    assert res.returncode == 0 and "verify: passed: 6 outputs of 2 cases" in res.stdout, res.stdout
    assert cli.main(["bundle", str(program), "main", "--inputs", str(tmp_path / "in2.npz"), "--arg", "scale=2.0",
                     "--arg", "k=1", "--replace"]) == 0
    manifest, _ = _arrays(program)
    assert len(manifest["cases"]) == 1 and len(list(program.glob("bundle-*.safetensors"))) == 1


def test_verify_without_a_bundle_or_with_a_bad_one_is_an_error(tmp_path):
    prog = write_program_dir(tmp_path / "q.tvm", FLOATS, {"w": np.ones((5, 4), np.float32)}, {})
    res = _verify(prog)
    assert res.returncode == 1 and "bundle.json not found" in res.stderr and "tensorvm bundle" in res.stderr
    (prog / "bundle.json").write_text('{"format": "tensorvm-bundle", "version": 1, "cases": [{"function": "main", '
                                      '"arrays": "../x.safetensors", "outputs": []}]}')
    res = _verify(prog)
    assert res.returncode == 1 and "must name a file in the program directory" in res.stderr
    res = _verify(prog, "--ids", "1 2")
    assert res.returncode == 1 and "verify takes --threads and --max-instructions only" in res.stderr


def test_marian_generate_bundle_verifies(tmp_path):
    prog = import_hf(hf.checkpoint_dir("tiny-marian"), tmp_path / "m.tvm")
    assert cli.main(["bundle", str(prog), "generate", "--ids", "5 17 9 0; 30 8 0", "--arg", "max_new_tokens=8",
                     "--arg", "num_beams=3"]) == 0
    manifest, _ = _arrays(prog)
    tokens = manifest["cases"][0]["outputs"][0]
    assert tokens["dtype"] == "I64" and tokens["shape"][0] == 2 and tokens["compare"] == "exact"
    res = _verify(prog, "--threads", "2")
    assert res.returncode == 0, res.stdout + res.stderr
