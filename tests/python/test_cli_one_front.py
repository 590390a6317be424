"""`tensorvm run` and `tensorvm-run` build a function's inputs with one code (cli/run_io.h,
bound into Python as _C.build_inputs: pycompiler/cli_io.py), so the same command gives the
same outputs through both: a decoder-only batch of unequal --ids (left-padded, as
transformers pads prompts), and Whisper's transcribe from --wav with --language."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorvm import _C
from tensorvm.pycompiler.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402
from pyc_helpers import requires_vm, tensorvm_run_tool  # noqa: E402

pytestmark = [requires_vm, pytest.mark.skipif(not getattr(_C, "has_text", False),
                                              reason="tensorvm built without the text library")]


def _both(tmp_path, capsys, program, *argv):
    """The outputs of `tensorvm run PROGRAM argv` and of `tensorvm-run PROGRAM argv`, as arrays."""
    py_out, cpp_out = tmp_path / "py.npz", tmp_path / "cpp.npz"
    assert main(["run", str(program), *argv, "--outputs", str(py_out)]) == 0, capsys.readouterr().err
    res = subprocess.run([tensorvm_run_tool(), str(program), *argv, "--outputs", str(cpp_out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    with np.load(py_out) as a, np.load(cpp_out) as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
        return {k: a[k] for k in a.files}


def test_decoder_only_unequal_ids_pad_alike(tmp_path, capsys):
    from tensorvm.pycompiler.import_hf import import_hf

    ckpt = tf.tiny_gpt2_checkpoint(tf.make_byte_bpe_tokenizer(tmp_path / "tok", "gpt2"), tmp_path / "ckpt")
    program = import_hf(ckpt, tmp_path / "gpt2.tvm")
    out = _both(tmp_path, capsys, program, "generate", "--ids", "5 6 7 8; 9 10", "--arg", "max_new_tokens=3",
                "--max-instructions", "10000000")
    seqs = out["arr_0"]
    assert seqs.shape[0] == 2 and seqs.shape[1] >= 4
    assert seqs[1, 2:4].tolist() == [9, 10]  # the short row on the right: padded on the left


def test_whisper_wav_and_language_alike(tmp_path, capsys):
    import wave

    from tensorvm.pycompiler.import_hf import import_hf

    ckpt = tf.tiny_whisper_checkpoint(tf.make_whisper_tokenizer(tmp_path / "tok"), tmp_path / "ckpt", seed=5,
                                      prompt_config=True)
    program = import_hf(ckpt, tmp_path / "w.tvm")
    audio = (np.random.default_rng(3).standard_normal(6000) * 0.1 * 32768).astype("<i2")
    with wave.open(str(tmp_path / "a.wav"), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(audio.tobytes())
    for language in (["--language", "fr"], []):  # given, and detected by the program
        _both(tmp_path, capsys, program, "transcribe", "--wav", str(tmp_path / "a.wav"), *language,
              "--arg", "max_new_tokens=4")
