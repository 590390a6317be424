"""examples/translate.cpp builds against the installed library and gives the tokens
the Python binding gives for the same program and inputs."""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from marian_fixtures import imported
from tensorvm import _C

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TENSORVM_BUILD_DIR", ROOT / "build" / "release"))


def _build_dir():
    if (BUILD / "CMakeCache.txt").is_file():
        return BUILD
    if os.environ.get("CI"):
        pytest.fail(f"no CMake build at {BUILD} (set TENSORVM_BUILD_DIR); .ci/setup makes build/release")
    pytest.skip(f"no CMake build at {BUILD}; set TENSORVM_BUILD_DIR to a configured build directory")


def test_example_builds_against_install_and_matches_python(tmp_path):
    build = _build_dir()
    prefix, ex_build = tmp_path / "prefix", tmp_path / "examples"
    run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True, text=True)  # noqa: E731
    run("cmake", "--build", str(build))
    run("cmake", "--install", str(build), "--prefix", str(prefix), "--component", "dev")
    assert (prefix / "lib" / "cmake" / "tensorvm" / "tensorvmConfig.cmake").is_file()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run("cmake", "-S", str(ROOT / "examples"), "-B", str(ex_build), f"-DCMAKE_PREFIX_PATH={prefix}", *generator)
    out = run("cmake", "--build", str(ex_build))
    assert "warning" not in out.stdout.lower()

    _, prog = imported("tiny-marian", tmp_path)
    sentences = [[5, 6, 7, 8, 0], [9, 3, 0]]
    res = run(str(ex_build / "translate"), str(prog.path), *(" ".join(map(str, s)) for s in sentences))
    got = [[int(t) for t in line.split("\t")[0].split()] for line in res.stdout.strip().splitlines()]
    session = _C.Session(_C.Program.load(str(prog.path)))
    for sentence, tokens in zip(sentences, got):
        ids = np.array([sentence])
        want = session.run_named("generate", {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        assert tokens == want[0].tolist()
