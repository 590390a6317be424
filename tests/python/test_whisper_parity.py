"""Whisper: generate token-exact with transformers' generic generate
(GenerationMixin.generate, not WhisperForConditionalGeneration.generate's
long-form logic) on seeded random-weight checkpoints of odd sizes, given the same
input_features and decoder_input_ids (the task prompt)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C
from pyc_helpers import import_checkpoint, torch_generate

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
if str(_FIXTURES) not in sys.path:
    sys.path.insert(0, str(_FIXTURES))

import random_checkpoints  # noqa: E402

PROMPT = [97, 99, 100, 96]  # start of transcript, a language, a task, no timestamps
SUPPRESS = random_checkpoints.CONFIGS["whisper-odd"][3]["suppress_tokens"]
BEGIN_SUPPRESS = random_checkpoints.CONFIGS["whisper-odd"][3]["begin_suppress_tokens"]


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    return import_checkpoint("whisper-odd", tmp_path_factory)


def features(model, batch, seed=0):
    frames = 2 * model.config.max_source_positions
    return np.random.default_rng(seed).standard_normal((batch, model.config.num_mel_bins, frames)).astype(np.float32)


def hf_generate(model, feats, prompt=None, **kw):
    from transformers.generation.utils import GenerationMixin

    extra = {} if prompt is None else {"decoder_input_ids": prompt}
    return torch_generate(model, GenerationMixin.generate, input_features=feats, **extra, **kw)


@pytest.mark.parametrize("batch", [1, 2])
def test_greedy_with_task_prompt(odd, batch):
    prog, model = odd
    feats = features(model, batch, seed=batch)
    prompt = np.array([PROMPT] * batch, np.int64)
    want = hf_generate(model, feats, prompt, max_new_tokens=20, num_beams=1, return_dict_in_generate=True,
                       output_scores=True)
    got = prog.generate(input_features=feats, decoder_input_ids=prompt, max_new_tokens=20, num_beams=1,
                        output_scores=True)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())  # the prompt, then the tokens
    assert len(got.scores) == len(want.scores)
    for g, w in zip(got.scores, want.scores):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-4)
    generated = got.sequences[:, len(PROMPT):]
    assert not np.isin(generated, SUPPRESS).any()
    assert not np.isin(generated[:, 0], BEGIN_SUPPRESS).any()


@pytest.mark.parametrize("batch", [1, 2])
def test_beam_search(odd, batch):
    prog, model = odd
    feats = features(model, batch, seed=10 + batch)
    prompt = np.array([PROMPT] * batch, np.int64)
    kw = dict(max_new_tokens=12, num_beams=4, num_return_sequences=2, output_scores=True,
              return_dict_in_generate=True)
    want = hf_generate(model, feats, prompt, **kw)
    got = prog.generate(input_features=feats, decoder_input_ids=prompt, **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(), rtol=1e-4, atol=1e-4)


def test_checkpoint_defaults_without_prompt(odd):
    """No decoder_input_ids: the decoder starts from decoder_start_token_id alone, and
    the checkpoint's max_length and processors apply."""
    prog, model = odd
    feats = features(model, 2, seed=3)
    np.testing.assert_array_equal(prog.generate(feats), hf_generate(model, feats).numpy())


def test_processors_change_the_result(odd):
    """Passing empty suppress lists for one call lifts the checkpoint's bans, as
    transformers' keywords do (so the test above would notice them missing)."""
    prog, model = odd
    feats = features(model, 2, seed=4)
    prompt = np.array([PROMPT] * 2, np.int64)
    kw = dict(max_new_tokens=10, suppress_tokens=[], begin_suppress_tokens=[])
    np.testing.assert_array_equal(prog.generate(feats, decoder_input_ids=prompt, **kw),
                                  hf_generate(model, feats, prompt, **kw).numpy())


def test_bad_features(odd):
    prog, model = odd
    feats = features(model, 1)
    with pytest.raises(tensorvm.VMError, match=r"Whisper expects input_features \[batch, 80, 128\]"):
        prog.generate(feats[:, :, :100])
    with pytest.raises(tensorvm.VMError, match=r"Whisper expects input_features"):
        prog.generate(feats[:, :40, :])
    with pytest.raises(ValueError, match="input_features must be a float array"):
        prog.generate(np.zeros((1, 80, 128), np.int64))
    with pytest.raises(ValueError, match="input_features must be a float array"):
        prog.generate(feats[0])
    with pytest.raises(TypeError, match="pass the encoder's input, input_features, once"):
        prog.generate(feats, input_features=feats)
    with pytest.raises(ValueError, match="decoder_input_ids must have one row per input_features row"):
        prog.generate(feats, decoder_input_ids=np.array([PROMPT] * 2))


def test_replay_matches_vm(odd):
    prog, model = odd
    feats = features(model, 1, seed=5)
    prompt = np.array([PROMPT], np.int64)
    vm = prog.generate(feats, decoder_input_ids=prompt, max_new_tokens=3)
    np.testing.assert_array_equal(prog.generate(feats, decoder_input_ids=prompt, max_new_tokens=3,
                                                engine="replay"), vm)


def audio_and_features(model, samples, seed):
    """Random speech-level audio [2, samples] and transformers' features of it, padded or
    cut to the model's frames x 160 samples."""
    import transformers

    rng = np.random.default_rng(seed)
    audio = (rng.standard_normal((2, samples)) * 0.1).astype(np.float32)
    audio[1, samples // 2:] = 0.0  # silence at the end of one row
    fe = transformers.WhisperFeatureExtractor(feature_size=model.config.num_mel_bins)
    frames = 2 * model.config.max_source_positions
    return audio, fe(list(audio), sampling_rate=16000, max_length=frames * 160, return_tensors="np").input_features


def test_transcribe_audio(odd):
    """transcribe(audio): the log-mel features in the program, then generate."""
    prog, model = odd
    audio, feats = audio_and_features(model, 15000, seed=7)
    prompt = np.array([PROMPT] * 2, np.int64)
    want = hf_generate(model, feats, prompt, max_new_tokens=10).numpy()
    np.testing.assert_array_equal(prog.run("transcribe", audio, prompt, 10, None), want)
    np.testing.assert_array_equal(prog.run("transcribe", audio, None, None, None), hf_generate(model, feats).numpy())


def test_real_input_shape_3000_frames(tmp_path_factory):
    """Whisper's own input shape: 30 s of audio, 80 x 3000 frames, 1500 encoder positions."""
    prog, model = import_checkpoint("whisper-3000", tmp_path_factory)
    audio, feats = audio_and_features(model, 16000 * 12, seed=6)
    prompt = np.array([PROMPT] * 2, np.int64)
    for kw in (dict(num_beams=1), dict(num_beams=4, num_return_sequences=2)):
        want = hf_generate(model, feats, prompt, max_new_tokens=8, **kw).numpy()
        np.testing.assert_array_equal(prog.generate(feats, decoder_input_ids=prompt, max_new_tokens=8, **kw), want)
    np.testing.assert_array_equal(prog.run("transcribe", audio, prompt, 8, 1),
                                  hf_generate(model, feats, prompt, max_new_tokens=8, num_beams=1).numpy())


def _write_wav(path, samples, rate=16000, channels=1):
    import wave

    pcm = np.clip(np.round(samples * 32768), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def test_tensorvm_run_transcribe_wav(odd, tmp_path):
    """tensorvm-run PROGRAM transcribe --wav FILE: audio in, token ids out, no Python."""
    import subprocess

    from pyc_helpers import tensorvm_run_tool

    prog, model = odd
    audio = (np.random.default_rng(8).standard_normal(12000) * 0.1).astype(np.float32)
    wav = tmp_path / "speech.wav"
    _write_wav(wav, audio)
    pcm = np.clip(np.round(audio * 32768), -32768, 32767).astype(np.int16).astype(np.float32) / 32768
    want = prog.run("transcribe", pcm[None, :], np.array([PROMPT], np.int64), 6, None)
    run = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--wav", str(wav), "--decoder-ids",
                          " ".join(map(str, PROMPT)), "--arg", "max_new_tokens=6"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"output 0 = tensor i64[1, {want.shape[1]}]"
    assert [int(t) for t in lines[1].split()] == want[0].tolist()

    stereo = tmp_path / "stereo.wav"
    _write_wav(stereo, np.zeros(200, np.float32), channels=2)
    run = subprocess.run([tensorvm_run_tool(), str(prog.path), "transcribe", "--wav", str(stereo)],
                         capture_output=True, text=True)
    if _C.has_audio:  # libsndfile and libsoxr: downmixed (tests/python/test_audio_files.py)
        assert run.returncode == 0, run.stderr
    else:
        assert run.returncode == 1 and "2 channels; Whisper takes mono audio" in run.stderr
        assert "no audio library" in run.stderr
    run = subprocess.run([tensorvm_run_tool(), str(prog.path), "encode", "--wav", str(wav)],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "--wav: encode has no parameter audio" in run.stderr


def test_import_meta_and_refusals(odd, tmp_path):
    import json
    import shutil

    from tensorvm.pycompiler.importers import UnsupportedConfig

    prog, model = odd
    meta = prog.meta
    assert meta["model_type"] == "whisper" and meta["is_encoder_decoder"] is True
    assert (meta["decoder_start_token_id"], meta["eos_token_id"], meta["max_position_embeddings"]) == (97, 98, 40)
    assert (meta["num_mel_bins"], meta["max_source_positions"]) == (80, 64)
    assert meta["tied_weights"] == {"proj_out.weight": "model.decoder.embed_tokens.weight"}
    for change, match in (({"activation_function": "quick_gelu_x"}, "activation_function 'quick_gelu_x'"),
                          ({"decoder_attention_heads": 5}, "not divisible by decoder_attention_heads")):
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(random_checkpoints.ensure("whisper-odd"), bad)
        config = json.loads((bad / "config.json").read_text())
        config.update(change)
        (bad / "config.json").write_text(json.dumps(config))
        with pytest.raises(UnsupportedConfig, match=match):
            tensorvm.import_hf(bad, tmp_path / "bad.tvm")


def test_int8_import_runs(odd, tmp_path):
    """quantize="int8": every linear layer and proj_out int8, the convolutions f32; the
    tokens may differ from f32's, so only the shape and the prompt are checked."""
    prog, model = odd
    out = tensorvm.import_hf(random_checkpoints.ensure("whisper-odd"), tmp_path / "q.tvm", quantize="int8")
    q = tensorvm.load(out)
    assert q.meta["quantize"] == "int8"
    seqs = q.generate(features(model, 2), decoder_input_ids=np.array([PROMPT] * 2), max_new_tokens=5)
    assert seqs.shape == (2, 9) and (seqs[:, :4] == PROMPT).all()
