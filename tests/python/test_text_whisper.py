"""The C++ Whisper tokenizer (text/whisper.cpp over text/byte_bpe.cpp) against
transformers' WhisperTokenizer (the same class as WhisperTokenizerFast in transformers
5): a byte-level BPE trained here with Whisper's special and timestamp tokens; encode
with the task prompt, decode with Whisper's rules; tensorvm-run transcribe --wav
printing text; the language and task chosen at run time against
WhisperForConditionalGeneration.generate(language=, task=)."""
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
    from pyc_helpers import tensorvm_run_tool

    from tensorvm.pycompiler.import_hf import import_hf

    ckpt_tok, hf, _ = whisper
    ckpt = tf.tiny_whisper_checkpoint(ckpt_tok, tmp_path / "ckpt", seed=5)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "w.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "whisper-bpe"
    audio = (np.random.default_rng(9).standard_normal(12000) * 0.1).astype(np.float32)
    wav, pcm = _write_wav(tmp_path / "speech.wav", audio)
    pcm = pcm[None, :]
    prompt = hf.convert_tokens_to_ids(["<|startoftranscript|>", "<|en|>", "<|transcribe|>"])
    seqs = prog.run("transcribe", pcm, np.array([prompt], np.int64), 10, None)
    want = hf.batch_decode(seqs.tolist(), skip_special_tokens=True)
    run = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--wav", str(wav), "--decoder-ids",
                          " ".join(map(str, prompt)), "--arg", "max_new_tokens=10"], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout.decode().split("\n")[:-1] == want


# Run-time language and task: the decoder prompt WhisperForConditionalGeneration.generate
# builds from language= and task=, built by the C++ tokenizer (text/whisper.cpp) from
# meta.json's "prompt" entry (generation_config.json's lang_to_id / task_to_id).

@pytest.fixture(scope="module")
def whisper_prompted(tmp_path_factory):
    from transformers import WhisperForConditionalGeneration, WhisperTokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("whisper_prompt")
    tok_dir = tf.make_whisper_tokenizer(root / "tok")
    ckpt = tf.tiny_whisper_checkpoint(tok_dir, root / "ckpt", seed=11, prompt_config=True)
    prog = tensorvm.load(import_hf(ckpt, root / "w.tvm"))
    model = WhisperForConditionalGeneration.from_pretrained(ckpt).eval()
    return tok_dir, prog, model, WhisperTokenizer.from_pretrained(ckpt)


def _write_wav(path, audio):
    """`audio` written as a 16 kHz mono 16-bit WAV; (path, the samples as read back: pcm / 32768)."""
    import wave

    pcm16 = np.clip(np.round(audio * 32768), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm16.tobytes())
    return path, pcm16.astype(np.float32) / 32768


def _clips(n, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(int(rng.integers(4000, 16000))) * 0.1).astype(np.float32) for _ in range(n)]


def _hf_generate(model, clips, **kwargs):
    """transformers' WhisperForConditionalGeneration.generate on `clips`: (the tokens after
    the prompt, the prompt it fed the decoder)."""
    import torch
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=80)
    feats = fe(clips, sampling_rate=16000, max_length=128 * 160, return_tensors="pt").input_features
    seen = []
    hook = model.model.decoder.register_forward_pre_hook(
        lambda mod, args, kw: seen.append(kw["input_ids"].clone()), with_kwargs=True)
    try:
        with torch.no_grad():
            out = model.generate(input_features=feats, **kwargs)
    finally:
        hook.remove()
    # the first decoder call with a prompt: detect_language's [start] call comes before it
    return out.numpy(), next((x for x in seen if x.shape[1] > 1), seen[0]).numpy()


@pytest.mark.parametrize("language,task,num_beams,batch", [
    ("fr", None, 1, 1), ("french", "translate", 1, 2), ("EN", "transcribe", 3, 1), ("<|de|>", "translate", 1, 1),
    ("German", None, 2, 2)], ids=["fr", "french-translate", "EN-beams", "token-translate", "German-beams-batch"])
def test_transcribe_language_task_matches_generate(whisper_prompted, language, task, num_beams, batch):
    """The prompt equals what WhisperForConditionalGeneration.generate(language=, task=) feeds
    its decoder, and the tokens after it equal generate's, token for token (a random-weight
    model, 128 frames); program.transcribe's texts are batch_decode's."""
    _, prog, model, hf = whisper_prompted
    clips = _clips(batch, seed=40 + batch + num_beams)
    want, hf_prompt = _hf_generate(model, clips, language=language, task=task, max_new_tokens=7, num_beams=num_beams)
    prompt = prog.tokenizer.decoder_prompt(language, task)
    assert [prompt] * batch * num_beams == hf_prompt.tolist()  # a row per beam
    audio = np.zeros((batch, max(len(c) for c in clips)), np.float32)
    for i, c in enumerate(clips):
        audio[i, :len(c)] = c
    seqs = prog.run("transcribe", audio, np.array([prompt] * batch, np.int64), 7, num_beams)
    assert (seqs[:, :len(prompt)] == np.array(prompt)).all()
    got = seqs[:, len(prompt):]
    assert got[:, :want.shape[1]].tolist() == want.tolist()
    assert (got[:, want.shape[1]:] == hf.eos_token_id).all()  # transformers stops the batch sooner
    texts = prog.transcribe(clips, language=language, task=task, max_new_tokens=7, num_beams=num_beams)
    assert texts == hf.batch_decode(want, skip_special_tokens=True)
    assert any(t.strip() for t in texts)  # the suppressed timestamps leave text to compare


def test_transcribe_a_language_per_clip(whisper_prompted):
    """language=[...] gives each clip its own prompt, as generate(language=[...]) does."""
    _, prog, model, hf = whisper_prompted
    clips = _clips(2, seed=45)
    want, _ = _hf_generate(model, clips, language=["fr", "german"], task="translate", max_new_tokens=6)
    assert prog.transcribe(clips, language=["fr", "german"], task="translate",
                           max_new_tokens=6) == hf.batch_decode(want, skip_special_tokens=True)
    with pytest.raises(ValueError, match="1 languages for 2 clips"):
        prog.transcribe(clips, language=["fr"])


def test_transcribe_cli_language_task(whisper_prompted, tmp_path):
    """tensorvm-run transcribe --wav --language fr --task translate prints generate's text."""
    _, prog, model, hf = whisper_prompted
    audio = _clips(1, seed=50)[0]
    wav, pcm = _write_wav(tmp_path / "speech.wav", audio)
    want, _ = _hf_generate(model, [pcm], language="fr", task="translate",
                           max_new_tokens=7)
    run = tf.run_cli(prog.path, "transcribe", "--wav", wav, "--language", "fr", "--task", "translate", "--arg",
                     "max_new_tokens=7")
    assert run.stdout.decode().split("\n")[:-1] == hf.batch_decode(want, skip_special_tokens=True)
    bad = tf.run_cli(prog.path, "transcribe", "--wav", wav, "--language", "klingon", ok=False)
    assert bad.returncode == 1
    err = bad.stderr.decode()
    assert "--language klingon" in err and "unknown language 'klingon'" in err and "french" in err
    bad = tf.run_cli(prog.path, "transcribe", "--wav", wav, "--language", "fr", "--task", "summarize", ok=False)
    assert "--task summarize" in bad.stderr.decode() and "transcribe or translate" in bad.stderr.decode()
    bad = tf.run_cli(prog.path, "transcribe", "--wav", wav, "--language", "fr", "--decoder-ids", "1 2", ok=False)
    assert "not both" in bad.stderr.decode()
    bad = tf.run_cli(prog.path, "tokenize", "--text", "hi", "--language", "fr", ok=False)
    assert bad.returncode == 1


def test_transcribe_language_errors(whisper_prompted, tmp_path):
    """Unknown languages and tasks name themselves and list valid ones; transformers refuses
    the same."""
    _, prog, model, _ = whisper_prompted
    tok = prog.tokenizer
    clip = _clips(1, seed=60)
    for language, task, message in [("klingon", None, r"unknown language 'klingon'.*code \(.*en"),
                                     ("xx", None, "unknown language 'xx'"),
                                     ("fr", "summarize", "unknown task 'summarize': it is transcribe or translate")]:
        with pytest.raises(ValueError, match=message):
            tok.decoder_prompt(language, task)
        with pytest.raises(ValueError, match=f"transcribe: language={language!r}"):
            prog.transcribe(clip, language=language, task=task)
        if language is not None:
            with pytest.raises(ValueError):
                _hf_generate(model, clip, language=language, task=task, max_new_tokens=2)
    with pytest.raises(ValueError, match="not both"):
        prog.transcribe(clip, language="fr", decoder_input_ids=np.array([[1, 2]], np.int64))
    with pytest.raises(TypeError, match="holds None"):
        prog.transcribe(_clips(2, seed=62), language=["fr", None])
    assert tok.language_id("French") == tok.language_id("fr") == tok.decoder_prompt("fr")[1]


@pytest.mark.parametrize("case", ["no-table", "english-only"])
def test_transcribe_language_needs_the_table(whisper_prompted, tmp_path, case):
    """A checkpoint whose generation_config.json has no lang_to_id / task_to_id (old or
    English-only ones) imports and transcribes from prompt ids, but refuses a language as
    transformers does; is_multilingual false refuses it too. Without a language both
    transcribe as generate does: from the start token alone without lang_to_id, with the
    language detected when lang_to_id is there (even for is_multilingual false, as
    transformers)."""
    from transformers import WhisperForConditionalGeneration, WhisperTokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    tok_dir, _, _, _ = whisper_prompted
    other = tf.tiny_whisper_checkpoint(tok_dir, tmp_path / "ckpt", seed=11, prompt_config=case == "english-only",
                                       multilingual=False)
    prog = tensorvm.load(import_hf(other, tmp_path / "w.tvm"))
    message = "English-only" if case == "english-only" else "no language or task table"
    with pytest.raises(ValueError, match=message):
        prog.transcribe(_clips(1, seed=61), language="fr")
    clip = _clips(1, seed=61)
    want, hf_prompt = _hf_generate(WhisperForConditionalGeneration.from_pretrained(other).eval(), clip,
                                   max_new_tokens=3)
    assert len(hf_prompt[0]) == (3 if case == "english-only" else 1)
    assert prog.transcribe(clip, max_new_tokens=3) == \
        WhisperTokenizer.from_pretrained(other).batch_decode(want, skip_special_tokens=True)
    assert ("detect_language" in prog.functions) == (case == "english-only")


# Language detection: generate(language=None) on a checkpoint with lang_to_id detects each
# clip's language (detect_language: one decoder step from the start token, argmax over the
# language tokens) and prompts with it.

def _features(clips):
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=80)(clips, sampling_rate=16000, max_length=128 * 160,
                                                    return_tensors="np").input_features


@pytest.mark.parametrize("task,num_beams,batch", [(None, 1, 1), ("translate", 1, 2), (None, 2, 3),
                                                  ("transcribe", 3, 1)],
                         ids=["plain", "translate-batch", "beams-batch", "transcribe-beams"])
def test_transcribe_detects_the_language_as_generate(whisper_prompted, task, num_beams, batch):
    """No language: the detected language token equals transformers' detect_language, the
    prompt generate feeds its decoder, and the tokens after it generate's (random weights:
    both sides take the same argmax)."""
    import torch

    _, prog, model, hf = whisper_prompted
    clips = _clips(batch, seed=70 + batch + num_beams)
    feats = _features(clips)
    with torch.no_grad():
        hf_lang = model.detect_language(input_features=torch.from_numpy(feats)).numpy()
    got_lang = prog.run("detect_language", feats)
    assert got_lang.tolist() == hf_lang.tolist()
    assert np.asarray(prog.replay("detect_language", feats)).tolist() == hf_lang.tolist()
    want, hf_prompt = _hf_generate(model, clips, task=task, max_new_tokens=7, num_beams=num_beams)
    template = prog.tokenizer.decoder_prompt(None, task)
    assert template[1] == -1 and len(template) == hf_prompt.shape[1]
    prompts = [[int(lang) if t == -1 else t for t in template] for lang in hf_lang]
    assert np.repeat(np.array(prompts), num_beams, axis=0).tolist() == hf_prompt.tolist()
    audio = np.zeros((batch, max(len(c) for c in clips)), np.float32)
    for i, c in enumerate(clips):
        audio[i, :len(c)] = c
    assert prog.run("detect_language_audio", audio).tolist() == hf_lang.tolist()
    texts = prog.transcribe(clips, task=task, max_new_tokens=7, num_beams=num_beams)
    assert texts == hf.batch_decode(want, skip_special_tokens=True)
    seqs = prog.run("transcribe", audio, np.array(prompts, np.int64), 7, num_beams)
    got = seqs[:, len(template):]
    assert got[:, :want.shape[1]].tolist() == want.tolist()
    assert (got[:, want.shape[1]:] == hf.eos_token_id).all()


def test_transcribe_detects_after_forced_decoder_ids(whisper_prompted, tmp_path):
    """A released checkpoint's generation_config has forced_decoder_ids [[1, null], [2,
    <|transcribe|>]]: generate(language=None, task=None) prompts with the start token, the
    detected language, <|transcribe|>, <|notimestamps|>; so does transcribe."""
    from transformers import GenerationConfig, WhisperForConditionalGeneration

    from tensorvm.pycompiler.import_hf import import_hf

    tok_dir, _, _, hf = whisper_prompted
    ckpt = tf.tiny_whisper_checkpoint(tok_dir, tmp_path / "ckpt", seed=12, prompt_config=True)
    g = GenerationConfig.from_pretrained(ckpt)
    g.forced_decoder_ids = [[1, None], [2, hf.convert_tokens_to_ids("<|transcribe|>")]]
    g.save_pretrained(ckpt)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "w.tvm"))
    model = WhisperForConditionalGeneration.from_pretrained(ckpt).eval()
    clips = _clips(2, seed=80)
    want, hf_prompt = _hf_generate(model, clips, max_new_tokens=6)
    assert hf_prompt.shape[1] == 4 and hf_prompt[0, 2] == hf.convert_tokens_to_ids("<|transcribe|>")
    template = prog.tokenizer.decoder_prompt(None)
    assert [t for i, t in enumerate(template) if i != 1] == [hf_prompt[0, i] for i in (0, 2, 3)]
    assert prog.transcribe(clips, max_new_tokens=6) == hf.batch_decode(want, skip_special_tokens=True)


def test_transcribe_cli_detects_the_language(whisper_prompted, tmp_path):
    """tensorvm-run transcribe --wav without --language (and with --task) prints what
    generate(language=None) gives; --outputs holds the detected prompt."""
    _, prog, model, hf = whisper_prompted
    audio = _clips(1, seed=90)[0]
    wav, pcm = _write_wav(tmp_path / "speech.wav", audio)
    for extra, task in [((), None), (("--task", "translate"), "translate")]:
        want, hf_prompt = _hf_generate(model, [pcm], task=task, max_new_tokens=7)
        out = tmp_path / "out.npz"
        run = tf.run_cli(prog.path, "transcribe", "--wav", wav, *extra, "--arg", "max_new_tokens=7", "--outputs", out)
        assert run.stdout.decode().split("\n")[:-1] == hf.batch_decode(want, skip_special_tokens=True)
        seqs = np.load(out)["arr_0"]
        assert seqs[:, :hf_prompt.shape[1]].tolist() == hf_prompt.tolist()
