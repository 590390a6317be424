"""`tensorvm import-hf` and `tensorvm-run PROGRAM generate --ids` (C++ only) end to end."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from marian_fixtures import hf
from tensorvm import _C
from tensorvm.pycompiler import cli

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TENSORVM_BUILD_DIR", ROOT / "build" / "release"))


def test_import_hf_cli(tmp_path, capsys):
    out = tmp_path / "m.tvm"
    assert cli.main(["import-hf", str(hf.checkpoint_dir("tiny-untied")), "-o", str(out)]) == 0
    assert (out / "program.py").is_file() and (out / "weights.safetensors").is_file()
    assert cli.main(["import-hf", str(tmp_path / "missing"), "-o", str(tmp_path / "x.tvm")]) == 1
    assert "not a transformers checkpoint directory" in capsys.readouterr().err
    assert not (tmp_path / "x.tvm").exists()


def test_tensorvm_run_generate_from_ids(tmp_path):
    tool = BUILD / "tensorvm-run"
    if not tool.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing")
        pytest.skip(f"{tool} is missing; set TENSORVM_BUILD_DIR")
    out = tmp_path / "m.tvm"
    cli.main(["import-hf", str(hf.checkpoint_dir("tiny-untied")), "-o", str(out)])
    res = subprocess.run([str(tool), str(out), "generate", "--ids", "5 6 7 0; 8 9 0", "--arg", "max_new_tokens=6",
                          "--outputs", str(tmp_path / "o.safetensors")], check=True, capture_output=True, text=True)
    rows = [list(map(int, line.split())) for line in res.stdout.splitlines()[1:3]]
    meta_pad = json.loads((out / "meta.json").read_text())["pad_token_id"]
    ids = np.array([[5, 6, 7, 0], [8, 9, 0, meta_pad]])
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])
    want = _C.Session(_C.Program.load(str(out))).run_named(
        "generate", {"input_ids": ids, "attention_mask": mask, "max_new_tokens": 6})[0]
    assert rows == want.tolist()
    bad = subprocess.run([str(tool), str(out), "generate", "--ids", "5 x"], capture_output=True, text=True)
    assert bad.returncode == 1 and "--ids: 'x' is not a token id" in bad.stderr


def test_tensorvm_run_generate_with_list_options(tmp_path):
    """eos_token_id, bad_words_ids and sequence_bias from the CLI: their program
    forms in --inputs FILE.npz, next to --ids; the same tokens as Program.generate."""
    import tensorvm
    from tensorvm.pycompiler.generation import generate
    from tensorvm.pycompiler.generation.search import generate_inputs

    tool = BUILD / "tensorvm-run"
    if not tool.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing")
        pytest.skip(f"{tool} is missing; set TENSORVM_BUILD_DIR")
    out = tmp_path / "m.tvm"
    cli.main(["import-hf", str(hf.checkpoint_dir("tiny-untied")), "-o", str(out)])
    inputs = {i.name: i for i in generate_inputs()}
    opts = {"eos_token_id": [0, 11], "bad_words_ids": [[5, 6], [7], [32, 0]], "sequence_bias": {(9,): 2.0, (3, 4): -1.5}}
    np.savez(tmp_path / "opts.npz", **{k: inputs[k].check(v, {}) for k, v in opts.items()})
    res = subprocess.run([str(tool), str(out), "generate", "--ids", "5 6 7 0; 8 9 0", "--inputs", str(tmp_path / "opts.npz"),
                          "--arg", "max_new_tokens=6", "--arg", "num_beams=1"], check=True, capture_output=True, text=True)
    lines = res.stdout.splitlines()
    rows = [list(map(int, line.split())) for line in lines[1:1 + int(lines[0].split("[")[1].split(",")[0])]]
    prog = tensorvm.load(out)
    ids = np.array([[5, 6, 7, 0], [8, 9, 0, prog.meta["pad_token_id"]]])
    want = generate(prog, ids, np.array([[1, 1, 1, 1], [1, 1, 1, 0]]), max_new_tokens=6, num_beams=1, **opts)
    assert rows == want.tolist()
