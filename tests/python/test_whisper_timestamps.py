"""Whisper's timestamps (issue 30, step 1): the timestamp rule in the program's generation
library (generation/timestamps.py, transformers' WhisperTimeStampLogitsProcessor), on when
generate's return_timestamps is True, token for token against
WhisperForConditionalGeneration.generate(return_timestamps=True) on random-weight
checkpoints (greedy and beams, batches) over real speech spoken by espeak-ng; the
segments (cli/whisper_segments.h) against transformers' _retrieve_segment; both command
lines' --timestamps and --format."""
from __future__ import annotations

import json
import random
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402
from pyc_helpers import both_command_lines, requires_vm, tensorvm_run_tool  # noqa: E402

pytestmark = [requires_vm, pytest.mark.skipif(not getattr(_C, "has_text", False),
                                              reason="tensorvm built without the text library")]

PHRASES = ["The quick brown fox jumps over the lazy dog.", "Bonjour, je voudrais un café s'il vous plaît.",
           "Seven hundred and twelve people came to the meeting on Tuesday."]


def _speech(text: str, path: Path) -> np.ndarray:
    """`text` spoken by espeak-ng, as 16 kHz f32 samples (tf.espeak_speech)."""
    audio = tf.espeak_speech(text, path)
    if audio is None:
        pytest.skip("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    return audio


def _write_wav(path, audio):
    """16 kHz mono 16-bit; returns the samples as read back (pcm / 32768)."""
    pcm16 = np.clip(np.round(audio * 32768), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm16.tobytes())
    return pcm16.astype(np.float32) / 32768


@pytest.fixture(scope="module", params=[7, None], ids=["max-initial-7", "no-max-initial"])
def stamped(request, tmp_path_factory):
    """A random-weight Whisper (128 frames) whose generation config has what
    return_timestamps reads: no_timestamps_token_id, max_initial_timestamp_index, and
    suppress_tokens that leave the timestamps alone; and 16 kHz speech (the first 1.28 s
    of each phrase: the window of 128 frames)."""
    from transformers import GenerationConfig, WhisperForConditionalGeneration, WhisperTokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("whisper_stamps")
    tok_dir = tf.make_whisper_tokenizer(root / "tok")
    ckpt = tf.tiny_whisper_checkpoint(tok_dir, root / "ckpt", seed=31, prompt_config=True)
    g = GenerationConfig.from_pretrained(ckpt)
    g.suppress_tokens = [5, 17, 40]
    g.begin_suppress_tokens = [220]
    if request.param is not None:
        g.max_initial_timestamp_index = request.param
    g.save_pretrained(ckpt)
    prog = tensorvm.load(import_hf(ckpt, root / "w.tvm"))
    model = WhisperForConditionalGeneration.from_pretrained(ckpt).eval()
    clips = [_speech(p, root / f"say{i}.wav")[:20480] for i, p in enumerate(PHRASES)]
    return prog, model, WhisperTokenizer.from_pretrained(ckpt), clips, root


def _hf(model, clips, **kwargs):
    """transformers' generate(return_timestamps=True) over one window: (sequences with the
    prompt [rows, n], each row's segments as (start, end, tokens))."""
    import torch
    from transformers import WhisperFeatureExtractor

    feats = WhisperFeatureExtractor(feature_size=80)(clips, sampling_rate=16000, max_length=128 * 160,
                                                     return_tensors="pt").input_features
    with torch.no_grad():
        out = model.generate(input_features=feats, return_timestamps=True, force_unique_generate_call=True,
                             return_segments=True, **kwargs)
    segs = [[(float(s["start"]), float(s["end"]), s["tokens"].tolist()) for s in row] for row in out["segments"]]
    return out["sequences"].numpy(), segs


def _batch(clips):
    audio = np.zeros((len(clips), max(len(c) for c in clips)), np.float32)
    for i, c in enumerate(clips):
        audio[i, :len(c)] = c
    return audio


@pytest.mark.parametrize("language,num_beams,batch", [("en", 1, 1), ("fr", 1, 3), ("en", 3, 2), ("de", 2, 1)],
                         ids=["greedy", "greedy-batch", "beams-batch", "beams"])
def test_timestamps_match_generate(stamped, language, num_beams, batch):
    """transcribe(return_timestamps) gives transformers' tokens (its prompt without
    <|notimestamps|>) and its segments: times, tokens, and text as decode gives it."""
    prog, model, hf, clips, _ = stamped
    clips = clips[:batch]
    want, want_segs = _hf(model, clips, language=language, task="transcribe", max_new_tokens=14,
                          num_beams=num_beams)
    prompt = prog.tokenizer.decoder_prompt(language, "transcribe")  # ends in <|notimestamps|>
    seqs = prog.run("transcribe", _batch(clips), np.array([prompt] * batch, np.int64), 14, num_beams, True)
    assert (seqs[:, :len(prompt) - 1] == np.array(prompt[:-1])).all()
    assert seqs[:, :want.shape[1]].tolist() == want.tolist()
    assert (seqs[:, want.shape[1]:] == hf.eos_token_id).all()
    stamp0 = hf.convert_tokens_to_ids("<|0.00|>")
    assert (seqs[:, len(prompt) - 1] >= stamp0).all()  # the first token is a timestamp
    if num_beams == 1 and batch == 1:  # the Python reference ops run the rule the same
        replayed = prog.replay("transcribe", _batch(clips), np.array([prompt], np.int64), 14, 1, True)
        assert np.asarray(replayed).tolist() == seqs.tolist()
    got = prog.transcribe(clips, language=language, task="transcribe", max_new_tokens=14, num_beams=num_beams,
                          return_timestamps=True)
    assert [[(s["start"], s["end"], s["tokens"]) for s in row] for row in got] == want_segs
    assert [[s["text"] for s in row] for row in got] == \
        [[hf.decode(t, skip_special_tokens=True) for _, _, t in row] for row in want_segs]


def test_timestamps_off_is_unchanged(stamped):
    """return_timestamps False (or left out) decodes as before, the generic generate's
    tokens: the rule stays out of the chain."""
    import torch
    from transformers import WhisperFeatureExtractor
    from transformers.generation.utils import GenerationMixin

    prog, model, hf, clips, _ = stamped
    prompt = prog.tokenizer.decoder_prompt("en", "transcribe")
    audio = _batch(clips[:2])
    ids = np.array([prompt] * 2, np.int64)
    plain = prog.run("transcribe", audio, ids, 10, None)
    assert prog.run("transcribe", audio, ids, 10, None, False).tolist() == plain.tolist()
    feats = WhisperFeatureExtractor(feature_size=80)(clips[:2], sampling_rate=16000, max_length=128 * 160,
                                                     return_tensors="pt").input_features
    with torch.no_grad():
        want = GenerationMixin.generate(model, input_features=feats, decoder_input_ids=torch.from_numpy(ids),
                                        max_new_tokens=10).numpy()
    assert plain[:, :want.shape[1]].tolist() == want.tolist()


def test_generate_return_timestamps_matches_the_processor(stamped):
    """generate(return_timestamps=True) equals the generic generate with transformers'
    WhisperTimeStampLogitsProcessor appended (begin_index: the prompt's length),
    tokens and every step's finite scores."""
    import torch
    from transformers import WhisperFeatureExtractor
    from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor
    from transformers.generation.utils import GenerationMixin

    prog, model, hf, clips, _ = stamped
    feats = WhisperFeatureExtractor(feature_size=80)(clips, sampling_rate=16000, max_length=128 * 160,
                                                     return_tensors="np").input_features
    prompt = prog.tokenizer.decoder_prompt("fr", "translate")[:-1]
    ids = np.array([prompt] * len(clips), np.int64)
    out = prog.generate(feats, decoder_input_ids=ids, return_timestamps=True, max_new_tokens=12,
                        output_scores=True, return_dict_in_generate=True)
    proc = WhisperTimeStampLogitsProcessor(model.generation_config, begin_index=len(prompt))
    with torch.no_grad():
        want = GenerationMixin.generate(model, input_features=torch.from_numpy(feats),
                                        decoder_input_ids=torch.from_numpy(ids), max_new_tokens=12,
                                        logits_processor=[proc], output_scores=True, return_dict_in_generate=True)
    n = want.sequences.shape[1]
    assert out.sequences[:, :n].tolist() == want.sequences.tolist()
    for step, (a, b) in enumerate(zip(out.scores, want.scores)):
        b = b.numpy()
        assert (np.isinf(a) == np.isinf(b)).all(), step
        np.testing.assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], atol=1e-4, rtol=1e-4)


def test_segments_match_transformers():
    """The one parser (cli/whisper_segments.h, _C.whisper_segments) against transformers'
    _retrieve_segment on 3,000 generated-shaped rows: pairs, single endings, lone
    timestamps, none, the end token and padding."""
    import torch
    from transformers.models.whisper.generation_whisper import WhisperGenerationMixin

    rnd = random.Random(30)
    begin, eos, window = 50, 40, 64
    for _ in range(3000):
        gen, t = [], rnd.randrange(10)
        for _ in range(rnd.randrange(1, 14)):
            if rnd.random() < 0.4:
                t += rnd.randrange(3)
                gen.append(begin + min(t, window))
            else:
                gen.append(rnd.randrange(30))
        prompt = [45, 46]
        row = prompt + gen + [eos] * rnd.randrange(3)
        seq = torch.tensor(gen)
        want, _ = WhisperGenerationMixin._retrieve_segment(
            seek_sequence=seq, seek_outputs=[None], time_offset=torch.zeros(1, dtype=torch.float64),
            timestamp_begin=begin, seek_num_frames=torch.tensor([2 * window]), time_precision=0.02,
            time_precision_features=0.01, input_stride=2, prev_idx=0, idx=0, return_token_timestamps=False,
            decoder_input_ids=torch.tensor([prompt]))
        want = [(float(s["start"]), float(s["end"]), s["tokens"].tolist()) for s in want]
        if gen[0] < begin:  # the parser starts at the first timestamp (the rule forces one first)
            continue
        assert _C.whisper_segments(row, eos, begin, window) == want, gen


def test_cli_timestamps(stamped, tmp_path, capsys):
    """tensorvm-run and tensorvm run: transcribe --audio F --timestamps prints the segments
    (text, srt, vtt, json) the same through both; --arg return_timestamps=1 gives the ids."""
    from tensorvm.pycompiler.cli import main

    prog, model, hf, clips, _ = stamped
    wav = tmp_path / "speech.wav"
    pcm = _write_wav(wav, clips[0])
    _, want_segs = _hf(model, [pcm], language="en", task="transcribe", max_new_tokens=14)
    printed = {}
    for fmt in ("json", "text", "srt", "vtt"):
        argv = ["transcribe", "--audio", str(wav), "--language", "en", "--timestamps", "--format", fmt, "--arg",
                "max_new_tokens=14"]
        printed[fmt] = both_command_lines(prog.path, argv, capsys)
    segs = json.loads(printed["json"])["segments"]
    assert [(s["start"], s["end"], s["tokens"]) for s in segs] == want_segs[0]
    assert [s["text"] for s in segs] == [hf.decode(t, skip_special_tokens=True) for _, _, t in want_segs[0]]
    assert printed["vtt"].startswith("WEBVTT\n\n")
    assert printed["srt"].startswith("1\n00:00:")
    assert printed["text"].count("\n") == len(segs) and printed["text"].startswith("[00:00:")
    out_cpp, out_py = tmp_path / "c.npz", tmp_path / "p.npz"
    argv = ["transcribe", "--wav", str(wav), "--language", "en", "--arg", "max_new_tokens=14", "--arg",
            "return_timestamps=1"]
    subprocess.run([tensorvm_run_tool(), str(prog.path), *argv, "--outputs", str(out_cpp)], check=True,
                   capture_output=True, timeout=300)
    assert main(["run", str(prog.path), *argv, "--outputs", str(out_py)]) == 0
    with np.load(out_cpp) as a, np.load(out_py) as b:
        assert a["arr_0"].tolist() == b["arr_0"].tolist()
        assert [s for s in a["arr_0"][0].tolist()][3:] and a["arr_0"][0, 3] >= hf.convert_tokens_to_ids("<|0.00|>")
    bad = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--audio", str(wav), "--format", "srt"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "--timestamps [--format F] goes with Whisper's transcribe" in bad.stderr
    bad = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--audio", str(wav), "--timestamps",
                          "--format", "docx"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "--format docx: it is text, srt, vtt or json" in bad.stderr


def test_timestamps_refused_without_the_token(tmp_path):
    """A checkpoint whose generation_config has no no_timestamps_token_id has no timestamp
    rule: return_timestamps=True is refused by name (transformers refuses it too)."""
    from tensorvm.pycompiler.import_hf import import_hf

    tok_dir = tf.make_whisper_tokenizer(tmp_path / "tok")
    ckpt = tf.tiny_whisper_checkpoint(tok_dir, tmp_path / "ckpt", seed=3)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "w.tvm"))
    audio = np.zeros((1, 4000), np.float32)
    with pytest.raises(Exception, match="return_timestamps needs a Whisper program"):
        prog.run("transcribe", audio, None, 4, None, True)
    with pytest.raises(ValueError, match="return_timestamps needs a Whisper program"):
        prog.transcribe(audio, max_new_tokens=4, return_timestamps=True)
