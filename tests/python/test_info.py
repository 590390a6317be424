"""`tensorvm info` and `tensorvm-run --info`: the CPU, its features and the kernel variant,
and TENSORVM_ISA forcing a variant (or failing clearly) in a fresh process."""
import json
import os
import subprocess
import sys

import pytest

import tensorvm
from tensorvm.pycompiler.cli import main

from pyc_helpers import tensorvm_run_tool as _tool


def test_info_names_cpu_and_active_variant(capsys):
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    info = tensorvm._C.cpu_info()
    assert f"active: {info['active']}" in text and f"arch: {info['arch']}" in text
    assert info["active"] in info["variants_supported"]
    assert info["variants_supported"][0] == "scalar"
    assert set(info["variants_supported"]) <= set(info["variants_built"])
    assert main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["active"] == info["active"]


@pytest.mark.parametrize("variant", tensorvm._C.cpu_info()["variants_supported"])
def test_isa_environment_forces_variant(variant):
    env = dict(os.environ, TENSORVM_ISA=variant)
    py = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "info", "--json"], env=env,
                        capture_output=True, text=True, timeout=120)
    assert py.returncode == 0, py.stderr
    assert json.loads(py.stdout)["active"] == variant
    cpp = subprocess.run([_tool(), "--info"], env=env, capture_output=True, text=True, timeout=60)
    assert cpp.returncode == 0, cpp.stderr
    assert f"active: {variant} (TENSORVM_ISA={variant})" in cpp.stdout


def test_isa_environment_unknown_is_a_clear_error():
    env = dict(os.environ, TENSORVM_ISA="avx9000")
    cpp = subprocess.run([_tool(), "--info"], env=env, capture_output=True, text=True, timeout=60)
    assert cpp.returncode != 0
    assert "TENSORVM_ISA=avx9000: unknown kernel variant 'avx9000'" in cpp.stderr
