"""Whisper's long-form transcription (issue 30, step 2; cli/whisper_longform.h): audio longer
than a window, decoded in sequential windows as WhisperForConditionalGeneration.generate does,
segment for segment (times, tokens) against transformers on speech spoken by espeak-ng,
greedy and beams, with condition_on_prev_tokens, prompt_ids, the fallback thresholds (their
decisions, attempt by attempt), no_speech skips, sampling fallback (its schedule, valid
output, and the distribution of its draws against transformers'), both command lines (streamed segments, the same bytes) and the edges (silence, one
window exactly, one sample more, very short clips, windows without timestamps).

Checkpoints: the tokenizer-sized random Whisper of text_fixtures (128-frame windows, so a
few seconds of speech make many windows), with its timestamp logits raised
(tf.bias_timestamps) so that segments end inside windows and the seek moves by them; and a
3000-frame one (Whisper's 30-s windows) over 45 s of speech, biased and plain (a plain random
model rarely writes timestamp pairs: the whole window is one segment). The long runs
(1-10 minutes of speech, whisper-tiny's shape) are tests/whisper_longform_long.py."""
from __future__ import annotations

import json
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
from pyc_helpers import both_command_lines, chi_square_pvalue, requires_vm, tensorvm_run_tool  # noqa: E402

pytestmark = [requires_vm, pytest.mark.skipif(not getattr(_C, "has_text", False),
                                              reason="tensorvm built without the text library")]

TEXT = ("The quick brown fox jumps over the lazy dog. Seven hundred and twelve people came to the meeting on "
        "Tuesday. Bonjour, je voudrais un café s'il vous plaît. ")


def _speech(root: Path, repeat: int, speed: int = 170) -> np.ndarray:
    audio = tf.espeak_speech(TEXT * repeat, root / f"say{repeat}.wav", speed)
    if audio is None:
        pytest.skip("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    return audio


def _program(root: Path, name: str, positions: int, bias: dict | None, seed: int = 31):
    from transformers import GenerationConfig, WhisperForConditionalGeneration

    from tensorvm.pycompiler.import_hf import import_hf

    tok = root / "tok"
    if not tok.exists():
        tf.make_whisper_tokenizer(tok)
    ckpt = tf.tiny_whisper_checkpoint(tok, root / name, seed=seed, prompt_config=True,
                                      max_source_positions=positions)
    g = GenerationConfig.from_pretrained(ckpt)
    g.suppress_tokens = [5, 17, 40]  # the timestamps allowed; 17 stands for <|startofprev|> (second last)
    g.begin_suppress_tokens = [220]
    g.save_pretrained(ckpt)
    if bias is not None:
        tf.bias_timestamps(ckpt, **bias)
    prog = tensorvm.load(import_hf(ckpt, root / f"{name}.tvm"))
    return prog, WhisperForConditionalGeneration.from_pretrained(ckpt).eval()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """128-frame windows (1.28 s), timestamps biased; 6.4 s of speech: several windows."""
    root = tmp_path_factory.mktemp("longform")
    prog, model = _program(root, "small", 64, {})
    return prog, model, _speech(root, 1)[:102400], root


def _hf(model, audio, record=None, **kw):
    """transformers' long-form generate: the segments as (start, end, tokens); `record`, a
    list, gets each _need_fallback call's (temperature, (needs_fallback, should_skip), tokens)."""
    import torch
    from transformers import WhisperFeatureExtractor
    from transformers.models.whisper.generation_whisper import WhisperGenerationMixin

    frames = 2 * model.config.max_source_positions
    fe = WhisperFeatureExtractor(feature_size=80)
    if len(audio) // 160 > frames:
        f = fe(audio, sampling_rate=16000, truncation=False, padding="longest", return_attention_mask=True,
               return_tensors="pt")
    else:
        f = fe(audio, sampling_rate=16000, max_length=frames * 160, return_attention_mask=True, return_tensors="pt")
    original = WhisperGenerationMixin._need_fallback

    def need_fallback(self, seq, outs, i, processors, config, vocab, temperature):
        result = original(self, seq, outs, i, processors, config, vocab, temperature)
        if record is not None:
            record.append((temperature, tuple(result), seq.tolist()))
        return result

    WhisperGenerationMixin._need_fallback = need_fallback
    try:
        with torch.no_grad():
            out = model.generate(input_features=f.input_features, attention_mask=f.attention_mask,
                                 return_timestamps=True, return_segments=True, **kw)
    finally:
        WhisperGenerationMixin._need_fallback = original
    return [(float(s["start"]), float(s["end"]), s["tokens"].tolist()) for s in out["segments"][0]]


def _ours(prog, audio, windows=None, **kw):
    language = kw.pop("language", None)
    if "prompt_ids" in kw:
        kw["prompt_ids"] = kw["prompt_ids"].tolist()
    segs = prog.transcribe(audio, language=language, return_timestamps=True,
                           on_window=None if windows is None else windows.append, **kw)[0]
    return [(s["start"], s["end"], s["tokens"]) for s in segs]


def _decisions(windows):
    """Each attempt as _hf records it: (temperature, (needs_fallback, skipped), tokens)."""
    return [(a["temperature"], (a["needs_fallback"], w["skipped"] and a is w["attempts"][-1]), a["tokens"])
            for w in windows for a in w["attempts"]]


@pytest.mark.parametrize("kw", [dict(language="en", max_new_tokens=14), dict(language="fr", max_new_tokens=12,
                                                                                  num_beams=3),
                                dict(max_new_tokens=10, condition_on_prev_tokens=True),
                                dict(language="en", max_new_tokens=8, num_beams=2, condition_on_prev_tokens=True),
                                dict(language="de")],
                         ids=["greedy", "beams", "detect-condition", "beams-condition", "max-length"])
def test_long_form_matches_generate(small, kw):
    """Segment for segment: the seek by the last complete segment, the previous tokens as
    prompt (cut to max_target_positions / 2 - 1 after <|startofprev|>), language detection on
    the first window, max_length growing with the prompt when no max_new_tokens is given."""
    prog, model, audio, _ = small
    windows = []
    got = _ours(prog, audio, windows, **kw)
    assert got == _hf(model, audio, **kw)
    assert len(windows) > 3 and any(w["next_seek"] - w["seek"] < w["frames"] for w in windows)  # seeks by segment
    assert [w["seek"] for w in windows] == sorted(w["seek"] for w in windows)


@pytest.mark.parametrize("kw", [
    dict(temperature=(0.0, 0.0, 0.0), logprob_threshold=-0.4, compression_ratio_threshold=0.82),
    dict(temperature=(0.0, 0.0), logprob_threshold=-0.4, no_speech_threshold=5e-17, condition_on_prev_tokens=True)],
    ids=["fallback", "no-speech"])
def test_fallback_decisions_match(small, kw):
    """The thresholds' decisions, attempt by attempt (a schedule of zeros decodes greedily
    every time, so transformers' choices can be compared exactly): compression ratio (zlib)
    and average log-probability trigger fallback, no_speech_prob with a low log-probability
    skips the window; the segments stay equal."""
    prog, model, audio, _ = small
    windows, record = [], []
    got = _ours(prog, audio, windows, language="en", max_new_tokens=14, **kw)
    assert got == _hf(model, audio, record, language="en", max_new_tokens=14, **kw)
    assert _decisions(windows) == record
    flags = [r for _, r, _ in record]
    assert any(f[0] for f in flags) or any(f[1] for f in flags)
    if "no_speech_threshold" in kw:
        assert any(w["skipped"] for w in windows) and not all(w["skipped"] for w in windows)
    else:
        assert any(len(w["attempts"]) == 3 for w in windows) and any(len(w["attempts"]) == 1 for w in windows)


def test_sampling_fallback(small):
    """Fallback that samples cannot match transformers' random numbers: the first window's
    greedy attempt and its decision equal transformers', every window walks the schedule
    while its log-probability is low, windows sampled at >= 0.5 stop the conditioning, and
    the output is valid (timestamps ascending inside a segment, times within the audio)."""
    prog, model, audio, _ = small
    kw = dict(temperature=(0.0, 0.5, 1.0), logprob_threshold=-0.4, condition_on_prev_tokens=True)
    windows, record = [], []
    segs = _ours(prog, audio, windows, language="en", max_new_tokens=14, seed=3, **kw)
    _hf(model, audio, record, language="en", max_new_tokens=14, **kw)
    assert _decisions(windows)[0] == record[0]
    begin = prog.meta["no_timestamps_token_id"] + 1
    for w in windows:
        temps = [a["temperature"] for a in w["attempts"]]
        assert temps == [0.0, 0.5, 1.0][:len(temps)]
        assert all(a["needs_fallback"] for a in w["attempts"][:-1])
        assert all(a["sampled"] == (a["temperature"] > 0) for a in w["attempts"])
        assert all(-1e9 < a["avg_logprob"] < 0 for a in w["attempts"])
    sampled = [w for w in windows if len(w["attempts"]) > 1]
    assert sampled, "no window fell back"
    for before, after in zip(windows, windows[1:]):  # <|startofprev|> only after a low-temperature window
        conditioned = after["prompt"][0] == 17 and len(after["prompt"]) > 3
        assert conditioned == (before["attempts"][-1]["temperature"] < 0.5 and conditioned)
        if before["attempts"][-1]["temperature"] >= 0.5:
            assert after["prompt"] == windows[0]["prompt"]
    duration = len(audio) / 16000
    for start, end, tokens in segs:
        assert 0 <= start <= end and start < duration + 30
        stamps = [t for t in tokens if t >= begin]
        assert stamps == sorted(stamps)


def test_sampled_fallback_follows_transformers_distribution(small):
    """Sampled attempts, by distribution: a recording that repeats one 128-frame chunk gives
    windows with the same features (the log-mel of the whole recording, its global maximum
    included; all but the first and last window), and logprob_threshold=0 makes every attempt
    fall back, so each window draws its first token at 0.6 and at 2.0 (a seed of its own per
    attempt). Over 300 windows those tokens follow the distribution transformers' own
    sampling uses at that temperature (its generate's scores: the Whisper processors, the
    timestamp rule first, then the temperature; chi-square), and not the one at 1.0."""
    import torch
    from transformers import WhisperFeatureExtractor

    prog, model, audio, _ = small
    frames, temps, n = 2 * model.config.max_source_positions, (0.6, 2.0), 300
    chunk = audio[16000:16000 + frames * 160]
    windows = []
    prog.transcribe(np.tile(chunk, n + 2), language="en", return_timestamps=True, on_window=windows.append,
                    max_new_tokens=1, seed=0, temperature=(0.0,) + temps, logprob_threshold=0.0)
    inner = [w for w in windows[1:-1] if w["frames"] == frames]
    assert len(inner) == n and all(w["seek"] % frames == 0 for w in inner)  # aligned with the chunk: same features
    features = WhisperFeatureExtractor(feature_size=80)(np.tile(chunk, 3), sampling_rate=16000, truncation=False,
                                                         padding="longest", return_tensors="pt").input_features

    def distribution(temperature):
        with torch.no_grad():
            out = model.generate(input_features=features[:, :, frames:2 * frames], language="en",
                                 return_timestamps=True, do_sample=True, temperature=temperature, max_new_tokens=1,
                                 output_scores=True, return_dict_in_generate=True)
        return torch.softmax(out["segments"][0][0]["result"]["scores"][0].double().reshape(-1), -1).numpy()

    for k, t in enumerate(temps, start=1):
        assert all(w["attempts"][k]["temperature"] == t and w["attempts"][k]["sampled"] for w in inner)
        p = distribution(t)
        counts = np.bincount([w["attempts"][k]["tokens"][0] for w in inner], minlength=len(p))
        assert chi_square_pvalue(counts, p) > 1e-3, t
        assert chi_square_pvalue(counts, distribution(1.0)) < 1e-6, t  # the test tells temperatures apart


def test_prompt_ids(small):
    """prompt_ids before the start tokens: with "first-segment" as the first segment's
    previous text (alone without condition_on_prev_tokens), with "all-segments" before every
    window's previous tokens; the prompt is not returned as a segment."""
    import torch

    prog, model, audio, _ = small
    prompt = torch.tensor([17, 300, 301, 302])
    for kw in (dict(), dict(condition_on_prev_tokens=True),
               dict(condition_on_prev_tokens=True, prompt_condition_type="all-segments")):
        kw = dict(language="en", max_new_tokens=10, prompt_ids=prompt, **kw)
        windows = []
        assert _ours(prog, audio, windows, **dict(kw)) == _hf(model, audio, **kw)
        assert windows[0]["prompt"][-7:] == [17, 300, 301, 302, *windows[0]["prompt"][-3:]]  # then the start tokens


def test_edges(small):
    """Silence (long), one window exactly (128 frames: one call, as before), one sample more
    (still 128 frames: short), 160 samples more (129 frames: two windows, the second of one
    frame), a clip far shorter than a window with a long-form option (the window loop, as
    transformers' short-form with timestamps), and a bad option, refused."""
    prog, model, audio, _ = small
    window = 128 * 160
    kw = dict(language="en", max_new_tokens=10)
    silence = np.zeros(window * 4 + 77, np.float32)
    assert _ours(prog, silence, **kw) == _hf(model, silence, **kw)
    one = prog.transcribe(audio[:window], return_timestamps=True, **kw)[0]
    assert one == prog.transcribe(audio[:window + 1], return_timestamps=True, **kw)[0]
    windows = []
    longer = _ours(prog, audio[:window + 160], windows, **kw)
    assert longer == _hf(model, audio[:window + 160], **kw)
    assert windows[-1]["seek"] + windows[-1]["frames"] == 129
    short = audio[:3000]
    assert _ours(prog, short, temperature=0.0, **kw) == _hf(model, short, temperature=0.0, **kw)
    with pytest.raises(ValueError, match="no_speech_threshold needs logprob_threshold"):
        prog.transcribe(audio, no_speech_threshold=0.5, return_timestamps=True, **kw)
    with pytest.raises(ValueError, match="logprob_threshold with num_beams > 1"):
        prog.transcribe(audio, logprob_threshold=-1.0, num_beams=2, return_timestamps=True, **kw)
    with pytest.raises(ValueError, match="exceed the decoder's 40 positions"):
        prog.transcribe(audio, language="en", max_new_tokens=38, return_timestamps=True, condition_on_prev_tokens=True)


def test_windows_without_timestamp_pairs(tmp_path):
    """Timestamps lowered (bias_timestamps with a negative strength): the model writes the
    one timestamp the rule forces first, then text only: no pair, so each window is one
    segment to its end (or its last timestamp) and the next starts a window later; an empty
    clip and a 100-sample one go through the loop too."""
    prog, model = _program(tmp_path, "lowered", 64, dict(strength=-8.0, slope=0.0))
    audio = _speech(tmp_path, 1)[:64000]
    windows = []
    kw = dict(language="en", max_new_tokens=12)
    assert _ours(prog, audio, windows, **kw) == _hf(model, audio, **kw)
    whole = [w for w in windows if len(w["segments"]) == 1 and w["next_seek"] - w["seek"] == w["frames"]]
    assert len(whole) >= 2
    for clip in (np.zeros(0, np.float32), audio[:100]):
        segs = prog.transcribe(clip, long_form=True, return_timestamps=True, **kw)[0]
        assert segs == prog.transcribe(clip, temperature=0.0, return_timestamps=True, **kw)[0]
        assert len(segs) == 1 and segs[0]["start"] == 0.0  # one window, one segment


def test_stream_segments(small):
    """Program.stream_segments yields transcribe's segments one by one as windows finish,
    each with its clip; errors reach the consumer."""
    prog, _, audio, _ = small
    kw = dict(language="en", max_new_tokens=10)
    want = prog.transcribe([audio, audio[:40000]], return_timestamps=True, long_form=True, **kw)
    got = list(prog.stream_segments([audio, audio[:40000]], **kw))
    assert [{k: v for k, v in s.items() if k != "clip"} for s in got] == want[0] + want[1]
    assert [s["clip"] for s in got] == [0] * len(want[0]) + [1] * len(want[1])
    with pytest.raises(ValueError, match="no_speech_threshold needs logprob_threshold"):
        next(prog.stream_segments(audio, no_speech_threshold=0.5, **kw))


def test_text_without_timestamps(small):
    """long_form=True without timestamps: a long clip's text is its segments' (as transformers'
    sequences decoded); left out, the clip is cut to its first window as before; long_form=False
    keeps the cut with timestamps too."""
    prog, model, audio, _ = small
    segs = prog.transcribe(audio, language="en", max_new_tokens=10, return_timestamps=True)[0]
    text = prog.transcribe(audio, language="en", max_new_tokens=10, long_form=True)[0]
    assert text == prog.tokenizer.decode([t for s in segs for t in s["tokens"]], True)
    cut = prog.transcribe(audio, language="en", max_new_tokens=10)[0]
    assert cut == prog.transcribe(audio[:128 * 160], language="en", max_new_tokens=10)[0]
    one = prog.transcribe(audio, language="en", max_new_tokens=10, return_timestamps=True, long_form=False)[0]
    assert one == prog.transcribe(audio[:128 * 160], language="en", max_new_tokens=10, return_timestamps=True)[0]
    with pytest.raises(ValueError, match="on_window goes with the window loop"):
        prog.transcribe(audio[:1000], return_timestamps=True, on_window=print)


def _write_wav(path, audio):
    pcm16 = np.clip(np.round(audio * 32768), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm16.tobytes())
    return pcm16.astype(np.float32) / 32768


def test_cli_long_form(small, tmp_path, capsys):
    """tensorvm-run and tensorvm run: transcribe --audio LONG --timestamps prints the segments
    of every window (srt numbered across windows, one WebVTT header), the same bytes from both;
    the json segments are Program.transcribe's; long-form --arg options reach the loop;
    without --timestamps the transcript is one line; --outputs saves the segments' tokens."""
    prog, model, audio, _ = small
    wav = tmp_path / "long.wav"
    pcm = _write_wav(wav, audio)
    want = prog.transcribe(pcm, language="en", max_new_tokens=10, return_timestamps=True, temperature=(0.0, 0.0),
                           logprob_threshold=-0.4)[0]
    printed = {}
    for fmt in ("json", "srt", "vtt", "text", None):  # None: no --timestamps, the transcript
        argv = ["transcribe", "--audio", str(wav), "--language", "en", "--arg", "max_new_tokens=10", "--arg",
                "temperature=0,0", "--arg", "logprob_threshold=-0.4"]
        argv += ["--timestamps", "--format", fmt] if fmt else []
        printed[fmt] = both_command_lines(prog.path, argv, capsys)
    segs = json.loads(printed["json"])["segments"]
    assert [(s["start"], s["end"], s["tokens"], s["text"]) for s in segs] == \
        [(s["start"], s["end"], s["tokens"], s["text"]) for s in want]
    assert printed["srt"].count(" --> ") == len(want) and f"\n\n{len(want)}\n" in printed["srt"]
    assert printed["vtt"].count("WEBVTT") == 1 and printed["text"].count("\n") == len(want)
    assert printed[None] == prog.tokenizer.decode([t for s in want for t in s["tokens"]], True) + "\n"
    out = tmp_path / "ids.npz"
    subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--audio", str(wav), "--language", "en",
                    "--timestamps", "--arg", "max_new_tokens=10", "--outputs", str(out)], check=True, timeout=300)
    plain = prog.transcribe(pcm, language="en", max_new_tokens=10, return_timestamps=True)[0]
    with np.load(out) as z:
        assert z["arr_0"].tolist() == [[t for s in plain for t in s["tokens"]]]
    cut = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--audio", str(wav), "--language", "en",
                          "--arg", "max_new_tokens=10"], capture_output=True, text=True, timeout=300, check=True)
    assert cut.stdout == prog.transcribe(pcm, language="en", max_new_tokens=10)[0] + "\n"  # no --timestamps: as before
    bad = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--audio", str(wav), "--timestamps",
                          "--arg", "temperature=hot"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "--arg temperature=hot: hot is not a number" in bad.stderr


@pytest.fixture(scope="module")
def whisper_windows(tmp_path_factory):
    """Whisper's 3000-frame (30-s) windows over 45 s of speech: biased and plain."""
    root = tmp_path_factory.mktemp("longform30s")
    audio = _speech(root, 4, speed=150)
    assert len(audio) > 40 * 16000
    audio = audio[:45 * 16000]
    biased = _program(root, "biased", 1500, dict(slope=0.00064))
    plain = _program(root, "plain", 1500, None, seed=5)
    return biased, plain, audio


@pytest.mark.parametrize("num_beams", [1, 2], ids=["greedy", "beams"])
def test_30s_windows_match_generate(whisper_windows, num_beams):
    """45 s of speech through Whisper's window size: at least two windows, segments equal to
    transformers', the biased checkpoint seeking by segment, the plain one (no timestamp
    pairs) by whole windows."""
    (biased, biased_hf), (plain, plain_hf), audio = whisper_windows
    seen = {}
    for name, prog, model in (("biased", biased, biased_hf), ("plain", plain, plain_hf)):
        windows = []
        kw = dict(language="en", max_new_tokens=14, num_beams=num_beams, condition_on_prev_tokens=True)
        assert _ours(prog, audio, windows, **kw) == _hf(model, audio, **kw)
        assert len(windows) >= 2
        seen[name] = windows
    assert sum(len(w["segments"]) for w in seen["biased"]) > 2 * len(seen["biased"])
    assert any(w["next_seek"] - w["seek"] < w["frames"] for w in seen["biased"])  # by its last complete segment
