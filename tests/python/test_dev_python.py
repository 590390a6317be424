""".ci/dev-python: this tree's Python around the C++ of an installed tensorvm (here: the one
this test imports), importable at once; refused when that C++ has another op registry."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tensorvm import _C

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = str(Path(_C.__file__).parent)


def _dev_python(root: Path, build: Path):
    env = {**os.environ, "TENSORVM_C_FROM": INSTALLED}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(root / ".ci" / "dev-python"), str(build)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_package_of_this_tree_around_the_installed_extension(tmp_path):
    done = _dev_python(ROOT, tmp_path / "py")
    assert done.returncode == 0, done.stderr
    pkg = tmp_path / "py" / "pkg"
    assert done.stdout.strip() == f"export PYTHONPATH={pkg}"
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorvm; print(tensorvm.pycompiler.__file__); print(tensorvm._C.__file__)"],
        env={**os.environ, "PYTHONPATH": str(pkg)}, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    python_side, extension = probe.stdout.split()
    assert Path(python_side).resolve() == ROOT / "pycompiler" / "__init__.py"
    assert Path(extension).resolve() == Path(_C.__file__).resolve()


def test_an_extension_of_another_registry_is_refused(tmp_path):
    """A tree whose docs/ops.md (generated from its registry) is not the extension's."""
    tree = tmp_path / "tree"
    (tree / ".ci").mkdir(parents=True)
    (tree / "docs").mkdir()
    (tree / "cmake").mkdir()
    shutil.copy(ROOT / ".ci" / "dev-python", tree / ".ci" / "dev-python")
    (tree / "cmake" / "tensorvm_init.py").symlink_to(ROOT / "cmake" / "tensorvm_init.py")
    for part in ("pycompiler", "reference"):
        (tree / part).symlink_to(ROOT / part)
    ops = (ROOT / "docs" / "ops.md").read_text(encoding="utf-8")
    (tree / "docs" / "ops.md").write_text(ops + "\n### an_op_the_extension_lacks\n", encoding="utf-8")
    done = _dev_python(tree, tmp_path / "py")
    assert done.returncode == 1
    assert "has another op registry than this tree" in done.stderr and "use .ci/dev-build" in done.stderr


def test_a_folder_without_the_extension_is_refused(tmp_path):
    env = {**os.environ, "TENSORVM_C_FROM": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "dev-python"), str(tmp_path / "py")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and f"{tmp_path} has no _C extension" in done.stderr
