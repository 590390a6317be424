"""`tensorvm run` and `tensorvm-run` build a function's inputs with one code (cli/run_io.h,
bound into Python as _C.build_inputs: pycompiler/cli_io.py), so the same command gives the
same outputs through both: a decoder-only batch of unequal --ids (left-padded, as
transformers pads prompts), and Whisper's transcribe from --wav with --language. The text
verbs are one code too (cli/text_verbs.h, bound as _C.run_text_verb: pycompiler/cli_text.py):
tokenize, translate, complete and transcribe's transcript print the same bytes through
both, `tensorvm replay` included, and fail with the same messages."""
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


def _printed(capsys, command, program, *argv, ok=True):
    """What `tensorvm COMMAND PROGRAM argv` and `tensorvm-run PROGRAM argv` print: the bytes
    of stdout when `ok`, else the error message (after "error: ")."""
    capsys.readouterr()
    code = main([command, str(program), *map(str, argv)])
    py = capsys.readouterr()
    res = subprocess.run([tensorvm_run_tool(), str(program), *map(str, argv)], capture_output=True, timeout=300)
    if ok:
        assert code == 0 and res.returncode == 0, (py.err, res.stderr)
        assert py.out.encode() == res.stdout, argv
        return res.stdout.decode()
    assert code == 1 and res.returncode == 1, (py.out, res.stdout)
    py_msg, cpp_msg = py.err.split("error: ", 1)[1], res.stderr.decode().split("error: ", 1)[1]
    assert py_msg == cpp_msg, argv
    return cpp_msg


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("gpt2")
    ckpt = tf.tiny_gpt2_checkpoint(tf.make_byte_bpe_tokenizer(root / "tok", "gpt2"), root / "ckpt")
    return import_hf(ckpt, root / "gpt2.tvm")


@pytest.fixture(scope="module")
def m2m100(tmp_path_factory):
    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("m2m100")
    ckpt = tf.tiny_m2m100_checkpoint(tf.make_m2m100_tokenizer(root / "tok"), root / "ckpt", seed=3)
    return import_hf(ckpt, root / "m2m.tvm")


def test_decoder_only_unequal_ids_pad_alike(tmp_path, capsys, gpt2):
    program = gpt2
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
        # the transcript, printed as text by both
        _printed(capsys, "run", program, "transcribe", "--wav", tmp_path / "a.wav", *language,
                 "--arg", "max_new_tokens=4")


def test_text_verbs_print_alike(tmp_path, capsys, gpt2, m2m100):
    text = "Hello there.\n\nUn deux «trois»"
    for command in ("run", "replay"):
        out = _printed(capsys, command, m2m100, "translate", "--text", text, "--src-lang", "de", "--tgt-lang", "fr",
                       "--arg", "max_new_tokens=5")
        assert len(out.split("\n")) == 4
        _printed(capsys, command, m2m100, "tokenize", "--text", text, "--src-lang", "de")
        _printed(capsys, command, gpt2, "complete", "--text", "Once upon\na time", "--arg", "max_new_tokens=3")
    f = tmp_path / "in.txt"
    f.write_bytes(b"one\r\ntwo\r\n")
    assert len(_printed(capsys, "run", gpt2, "tokenize", "--text-file", f).split("\n")) == 3
    _printed(capsys, "run", m2m100, "translate", "--text-file", f, "--arg", "num_beams=2", "--arg",
             "num_return_sequences=2", "--arg", "max_new_tokens=4")


def test_text_verbs_fail_alike(tmp_path, capsys, gpt2, m2m100):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nnot \xff fine\n")
    for program, argv, message in [
        (gpt2, ("tokenize", "--text-file", bad), "input line 2"),
        (gpt2, ("tokenize",), "needs --text"),
        (gpt2, ("tokenize", "--text", "x", "--text-file", bad), "one --text or --text-file"),
        (gpt2, ("tokenize", "--text-file", tmp_path / "missing.txt"), "cannot open"),
        (gpt2, ("tokenize", "--text", "x", "--arg", "max_new_tokens=2"), "tokenize takes no --arg"),
        (gpt2, ("translate", "--text", "x"), "decoder-only program"),
        (gpt2, ("complete", "--text", ""), "gives no tokens"),
        (m2m100, ("complete", "--text", "x"), "not a decoder-only program"),
        (m2m100, ("translate", "--text", "x", "--arg", "bogus=1"), "generate has no such option"),
        (m2m100, ("translate", "--text", "x", "--ids", "1 2"), "takes --text or --text-file"),
        (m2m100, ("translate", "--text", "x", "--language", "fr"), "takes --text or --text-file"),
        (m2m100, ("translate", "--text", "x", "--tgt-lang", "klingon"), "--tgt-lang klingon"),
        (m2m100, ("tokenize", "--text", "x", "--src-lang", "klingon"), "--src-lang klingon"),
        (m2m100, ("translate", "--text", "x", "--tgt-lang", "fr", "--arg", "forced_bos_token_id=3"), "not both"),
    ]:
        assert message in _printed(capsys, "run", program, *argv, ok=False), argv
