"""The C++ Whisper tokenizer (text/whisper.cpp over text/byte_bpe.cpp) against
transformers' WhisperTokenizer (the same class as WhisperTokenizerFast in transformers
5): a byte-level BPE trained here with Whisper's special and timestamp tokens; encode
with the task prompt, decode with Whisper's rules; tensorvm-run transcribe --wav
printing text."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402

pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")

SPECIALS = ("<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|fr|>", "<|transcribe|>", "<|notimestamps|>",
            "<|0.00|>", "<|1.24|>", "<|30.00|>", "<|startofprev|>")


@pytest.fixture(scope="module", params=[{}, {"language": "fr", "task": "transcribe"}], ids=["plain", "fr"])
def whisper(request, tmp_path_factory):
    from transformers import WhisperTokenizer

    root = tmp_path_factory.mktemp("whisper_tok")
    ckpt = tf.make_whisper_tokenizer(root / "ckpt", **request.param)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "whisper")
    return ckpt, WhisperTokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


def test_whisper_encode_matches_transformers(whisper):
    """The task prompt first, <|endoftext|> last; Whisper's tokens in the text are single tokens."""
    _, hf, tok = whisper
    assert tok.kind == "whisper-bpe"
    for line in tf.tricky_lines(1500, seed=35, specials=SPECIALS):
        assert tok.encode(line) == hf(line)["input_ids"], line
    with pytest.raises(ValueError, match="not valid UTF-8"):
        tok.encode(b"\xed\xa0\x80")  # a surrogate


def test_whisper_decode_matches_transformers(whisper):
    """decode == WhisperTokenizer.decode (and batch_decode) on 1,200 id rows: encoded lines,
    random ids over the whole vocabulary, and generate-shaped rows (task prompt,
    timestamps, <|startofprev|> prompts, <|endoftext|>)."""
    _, hf, tok = whisper
    rnd = random.Random(36)
    n = len(hf)
    ids_of = hf.convert_tokens_to_ids
    sot, eot, prev = ids_of(["<|startoftranscript|>", "<|endoftext|>", "<|startofprev|>"])
    first_stamp = ids_of("<|0.00|>")
    rows = [hf(s)["input_ids"] for s in tf.tricky_lines(300, seed=37, specials=SPECIALS)]
    rows += [[rnd.randrange(n) for _ in range(rnd.randint(0, 16))] for _ in range(400)]
    text_ids = [hf(s, add_special_tokens=False)["input_ids"] for s in tf.tricky_lines(500, seed=38)]
    for body in text_ids:
        row = [sot, ids_of(rnd.choice(["<|en|>", "<|fr|>", "<|de|>"])), ids_of("<|transcribe|>")]
        if rnd.random() < 0.5:
            row.append(ids_of("<|notimestamps|>"))
        for k, t in enumerate(body):
            if rnd.random() < 0.15:
                row.append(first_stamp + rnd.randrange(1501))
            row.append(t)
        if rnd.random() < 0.3:
            row = [prev] + text_ids[rnd.randrange(len(text_ids))] + row
        elif rnd.random() < 0.05:
            row = [prev] + body  # a prompt without <|startoftranscript|>: nothing is left
        rows.append(row + [eot] * rnd.randint(0, 3))
    assert len(rows) >= 1000
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids
    # batch_decode equals it too, except on <|startofprev|> rows: transformers 5 strips
    # the prompt in decode but not in batch_decode (its _strip_prompt sees the whole
    # batch); ours follows decode, which documents the stripping.
    plain = [r for r in rows if not r or r[0] != prev]
    assert tok.decode_batch(plain, True) == hf.batch_decode(plain, skip_special_tokens=True)


def test_transcribe_wav_prints_text(whisper, tmp_path):
    """import-hf carries Whisper's tokenizer; tensorvm-run transcribe --wav prints each
    sequence as text, as batch_decode(skip_special_tokens=True) gives it."""
    import subprocess
    import wave

    from pyc_helpers import tensorvm_run_tool

    from tensorvm.pycompiler.import_hf import import_hf

    ckpt_tok, hf, _ = whisper
    ckpt = tf.tiny_whisper_checkpoint(ckpt_tok, tmp_path / "ckpt", seed=5)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "w.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "whisper-bpe"
    audio = (np.random.default_rng(9).standard_normal(12000) * 0.1).astype(np.float32)
    pcm16 = np.clip(np.round(audio * 32768), -32768, 32767).astype("<i2")
    wav = tmp_path / "speech.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm16.tobytes())
    pcm = pcm16.astype(np.float32)[None, :] / 32768
    prompt = hf.convert_tokens_to_ids(["<|startoftranscript|>", "<|en|>", "<|transcribe|>"])
    seqs = prog.run("transcribe", pcm, np.array([prompt], np.int64), 10, None)
    want = hf.batch_decode(seqs.tolist(), skip_special_tokens=True)
    run = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--wav", str(wav), "--decoder-ids",
                          " ".join(map(str, prompt)), "--arg", "max_new_tokens=10"], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout.decode().split("\n")[:-1] == want
