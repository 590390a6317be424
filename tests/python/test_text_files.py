"""The files a program's tokenizer names, and tensorvm-run's --wav file, can neither hang
nor exhaust the process (issue 25, docs/text.md "Tokenizer files"): only regular files,
read without blocking, of bounded size, and for the tokenizer only files inside the
program directory (a symlink may point to another file of the program, not out of it).
Each case runs tensorvm-run in a subprocess with a timeout and an address-space limit,
so that a regression fails the test instead of hanging it or eating the machine."""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402
from pyc_helpers import tensorvm_run_tool  # noqa: E402

needs_text = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _run(*args, timeout=60):
    """tensorvm-run `args`; a run that does not end in `timeout` seconds fails the test."""
    try:
        return subprocess.run([tensorvm_run_tool(), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tensorvm-run {' '.join(map(str, args))} did not return in {timeout} s")


@pytest.fixture(scope="module")
def marian_program(tmp_path_factory):
    root = tmp_path_factory.mktemp("text_files")
    ckpt = tf.make_marian_tokenizer(root / "ckpt")
    return tf.tokenizer_only_program(ckpt, root / "tok.tvm", "marian")


def _copy(program, tmp_path):
    return Path(shutil.copytree(program, tmp_path / "p.tvm", symlinks=True))


def _tokenize(program):
    return _run(program, "tokenize", "--text", "Hello world")


@needs_text
@pytest.mark.parametrize("name", ["tokenizer/vocab.json", "tokenizer/source.spm"])
def test_a_fifo_is_refused_without_blocking(marian_program, tmp_path, name):
    p = _copy(marian_program, tmp_path)
    (p / name).unlink()
    os.mkfifo(p / name)
    r = _tokenize(p)
    assert r.returncode == 1 and f"{name}: not a regular file (a FIFO)" in r.stderr, r.stderr


@needs_text
@pytest.mark.parametrize("name,target", [("tokenizer/vocab.json", "/etc/passwd"),
                                         ("tokenizer/source.spm", "/dev/zero")])
def test_a_symlink_out_of_the_program_is_refused(marian_program, tmp_path, name, target):
    p = _copy(marian_program, tmp_path)
    (p / name).unlink()
    (p / name).symlink_to(target)
    r = _tokenize(p)
    assert r.returncode == 1, r.stderr
    assert f"{name}: resolves to {target}, outside the program directory" in r.stderr, r.stderr


@needs_text
def test_a_symlink_inside_the_program_is_followed(marian_program, tmp_path):
    want = _tokenize(marian_program)
    assert want.returncode == 0, want.stderr
    p = _copy(marian_program, tmp_path)
    (p / "tokenizer/vocab.json").rename(p / "vocab-real.json")
    (p / "tokenizer/vocab.json").symlink_to("../vocab-real.json")
    r = _tokenize(p)
    assert r.returncode == 0 and r.stdout == want.stdout, r.stderr
    # ... but not to a file inside that is not a regular one
    os.mkfifo(p / "fifo")
    (p / "tokenizer/source.spm").unlink()
    (p / "tokenizer/source.spm").symlink_to("../fifo")
    r = _tokenize(p)
    assert r.returncode == 1 and "tokenizer/source.spm: not a regular file (a FIFO)" in r.stderr, r.stderr


@needs_text
def test_a_tokenizer_file_over_the_cap_is_refused(marian_program, tmp_path):
    p = _copy(marian_program, tmp_path)
    os.truncate(p / "tokenizer/source.spm", 3 << 30)  # sparse: no disk, and never read
    r = _tokenize(p)
    assert r.returncode == 1 and "tokenizer/source.spm: 3221225472 bytes, over the 128 MiB limit" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def audio_program(tmp_path_factory):
    from tensorvm.pycompiler.program_dir import write_program_dir

    text = "# tensorvm ir 1\ndef f(audio: Tensor) -> Tensor:\n    return audio\n"
    return write_program_dir(tmp_path_factory.mktemp("wav") / "a.tvm", text, {}, {})


def test_wav_only_from_a_regular_file_of_bounded_size(audio_program, tmp_path):
    import wave

    ok = tmp_path / "ok.wav"
    with wave.open(str(ok), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(b"\0\0" * 5)
    r = _run(audio_program, "f", "--wav", ok)
    assert r.returncode == 0 and "[1, 5]" in r.stdout, (r.stdout, r.stderr)
    os.mkfifo(tmp_path / "fifo.wav")
    huge = tmp_path / "huge.wav"
    huge.write_bytes(ok.read_bytes())
    os.truncate(huge, 3 << 30)
    for path, message in [("/dev/zero", "/dev/zero: not a regular file (a character device)"),
                          (tmp_path / "fifo.wav", "fifo.wav: not a regular file (a FIFO)"),
                          (huge, "huge.wav: 3221225472 bytes, over the 2 GiB limit for a")]:
        r = _run(audio_program, "f", "--wav", path)
        assert r.returncode == 1 and message in r.stderr, (path, r.stderr)


@pytest.mark.parametrize("model_type,name", [("gpt2", "tokenizer.json"), ("m2m_100", "tokenizer_config.json"),
                                             ("whisper", "generation_config.json")])
def test_import_reads_no_fifo_in_the_checkpoint(tmp_path, model_type, name):
    """tokenizer_files reads JSON from the checkpoint before copying its tokenizer: a FIFO
    there is a file it cannot use, not a wait for a writer."""
    os.mkfifo(tmp_path / name)
    if model_type == "whisper":
        (tmp_path / "tokenizer.json").write_text("{}")
    code = ("import sys\nfrom tensorvm.pycompiler.tokenizer_attach import tokenizer_files\n"
            "print(tokenizer_files(sys.argv[1], sys.argv[2])[1])\n")
    try:
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path), model_type], capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tokenizer_files blocked on the FIFO {name}")
    assert r.returncode == 0, r.stderr
