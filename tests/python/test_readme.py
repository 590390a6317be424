"""Every command of README.md's "Using it" section, run as written on a small Marian
checkpoint (only the checkpoint path is replaced), so the README cannot drift from the code."""
import subprocess

import numpy as np
import pytest

from marian_fixtures import hf
from readme_blocks import CHECKPOINT_PLACEHOLDER, commands, environment, script_dir, section_blocks

CHECKPOINT = "tiny-untied"  # the smallest of tests/fixtures/make_checkpoints.py


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """Runs the shell block in a fresh directory; returns (directory, [(command, result)])."""
    work = tmp_path_factory.mktemp("readme")
    env = environment(script_dir(work))
    ckpt = str(hf.checkpoint_dir(CHECKPOINT))
    shell = [b for lang, b in section_blocks("Using it") if lang == ""][0]
    results = []
    for cmd in commands(shell):
        res = subprocess.run(["bash", "-c", cmd.replace(CHECKPOINT_PLACEHOLDER, ckpt)], cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
        results.append((cmd, res))
    return work, results, env, ckpt


def test_readme_shell_commands_succeed(readme_run):
    work, results, _, _ = readme_run
    assert len(results) >= 10
    for cmd, res in results:
        assert res.returncode == 0, f"README command failed: {cmd}\n{res.stderr}"
        assert "Traceback" not in res.stderr and "error" not in res.stderr.lower(), f"{cmd}\n{res.stderr}"
    for name in ("opus.tvm", "opus8.tvm"):
        assert (work / name / "program.py").is_file()


def test_readme_outputs_agree(readme_run):
    """run, replay and tensorvm-run computed the same encoder output from in.npz."""
    work, results, _, _ = readme_run
    from tensorvm.pycompiler import weights_io

    with np.load(work / "out.npz") as npz:
        via_python = npz["arr_0"]
    via_cpp = weights_io.read(work / "out.safetensors")[0]["arr_0"]
    np.testing.assert_array_equal(via_python, via_cpp)
    replay = next(res for cmd, res in results if cmd.startswith("tensorvm replay"))
    assert replay.stdout.startswith(f"arr_0: float32{list(via_python.shape)}")
    generate = next(res for cmd, res in results if "generate" in cmd and "--time" in cmd)
    assert "ms per generated token" in generate.stdout
    inspect_ir = next(res for cmd, res in results if "--ir | head" in cmd)
    assert len(inspect_ir.stdout.splitlines()) == 20


def test_readme_python_block(readme_run):
    work, _, env, ckpt = readme_run
    code = [b for lang, b in section_blocks("Using it") if lang == "python"][0]
    res = subprocess.run(["python", "-c", code.replace(CHECKPOINT_PLACEHOLDER, ckpt)], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().startswith("[[")
