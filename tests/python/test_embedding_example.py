"""examples/ builds against the pip-installed package exactly as README.md says
(`-Dtensorvm_DIR="$(tensorvm --cmake-dir)"`) and gives the tokens the Python binding
gives for the same program and inputs."""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from marian_fixtures import imported
from readme_blocks import commands, environment, script_dir, section_blocks
from tensorvm import _C
from tensorvm.pycompiler.locations import NotInstalledError

ROOT = Path(__file__).resolve().parents[2]


def _installed_cmake_dir() -> Path:
    """The CMake package of the tensorvm under test, if it was installed from this checkout."""
    def unavailable(why):
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)

    try:
        cmake_dir = Path(tensorvm.get_cmake_dir())
    except NotInstalledError as e:
        unavailable(f"{e} (run `pip install .` or .ci/setup)")
    include = Path(tensorvm.get_include_dir())
    stale = [h.relative_to(ROOT) for d in ("vm", "ops", "ir") for h in (ROOT / d).glob("*.h")
             if not (include / h.relative_to(ROOT)).is_file() or (include / h.relative_to(ROOT)).read_bytes() != h.read_bytes()]
    if stale:
        unavailable(f"the installed tensorvm ({tensorvm.__file__}) is not this checkout's: its {stale[0]} differs; "
                    "run `pip install .` here")
    return cmake_dir


def test_cmake_dir_layout():
    cmake_dir = _installed_cmake_dir()
    assert (cmake_dir / "tensorvmConfig.cmake").is_file()
    assert (Path(tensorvm.get_include_dir()) / "vm" / "vm.h").is_file()
    assert list(cmake_dir.parent.parent.glob("libtensorvm.a"))


def test_example_builds_from_readme_and_matches_python(tmp_path):
    _installed_cmake_dir()
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    _, prog = imported("tiny-marian", tmp_path)
    shutil.copytree(prog.path, tmp_path / "opus.tvm")
    env = environment(script_dir(tmp_path))
    block = next(b for lang, b in section_blocks("Using it") if lang == "" and "--cmake-dir" in b)
    results = []
    for cmd in commands(block):
        res = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
        assert "warning" not in (res.stdout + res.stderr).lower(), f"{cmd}\n{res.stdout}\n{res.stderr}"
        results.append((cmd, res))

    cmd, res = results[-1]
    sentences = [[int(t) for t in s.split()] for s in cmd.split('"')[1::2]]
    got = [[int(t) for t in line.split("\t")[0].split()] for line in res.stdout.strip().splitlines()]
    assert len(got) == len(sentences) >= 2
    session = _C.Session(_C.Program.load(str(tmp_path / "opus.tvm")))
    for sentence, tokens in zip(sentences, got):
        ids = np.array([sentence])
        want = session.run_named("generate", {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        assert tokens == want[0].tolist()

    # examples/complete.cpp: a decoder-only program, its tokens streamed by the callback
    from decoder_only_helpers import checkpoint

    tensorvm.import_hf(checkpoint("gpt2-odd"), tmp_path / "gpt2.tvm")
    prompt = [5, 17, 9, 33]
    res = subprocess.run([str(tmp_path / "build" / "examples" / "complete"), str(tmp_path / "gpt2.tvm"),
                          " ".join(map(str, prompt)), "7"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    sequence = [int(t) for t in lines[-1].removeprefix("sequence:").split()]
    want = tensorvm.load(tmp_path / "gpt2.tvm").generate(np.array([prompt]), max_new_tokens=7)[0].tolist()
    assert sequence == want
    assert [int(t) for t in lines[:-1]] == want[len(prompt):]  # streamed one per step, in order


def test_dev_component_installs_a_prefix(tmp_path):
    """Without pip: `cmake --install BUILD --prefix P --component dev` (docs/runtime.md) gives a
    prefix find_package(tensorvm) takes. Configures examples/ only; the build test is above."""
    build = Path(os.environ.get("TENSORVM_BUILD_DIR", ROOT / "build" / "release"))
    if not (build / "CMakeCache.txt").is_file() or not shutil.which("cmake"):
        pytest.skip(f"no CMake build at {build} (set TENSORVM_BUILD_DIR)")
    if not list(build.glob("libtensorvm.a")):
        pytest.skip(f"{build} has not built libtensorvm.a")
    prefix = tmp_path / "prefix"
    run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True, text=True)  # noqa: E731
    run("cmake", "--install", str(build), "--prefix", str(prefix), "--component", "dev")
    assert (prefix / "include" / "tensorvm" / "vm" / "vm.h").is_file()
    run("cmake", "-S", str(ROOT / "examples"), "-B", str(tmp_path / "ex"), f"-DCMAKE_PREFIX_PATH={prefix}")
