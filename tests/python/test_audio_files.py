"""Any audio file for Whisper (issue 30, step 4): io/audio_file.h decodes FLAC, Ogg/Vorbis,
Opus, MP3 and WAV of any rate, width and channel count with libsndfile, averages the
channels and resamples to 16 kHz with libsoxr (HQ). Its features equal those of the same
file read by soundfile, averaged, resampled by python-soxr (HQ) and put through
WhisperFeatureExtractor, within 1e-4; both command lines decode every format (--audio);
corrupt, truncated and hostile files fail naming the file and the reason."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402
from pyc_helpers import requires_vm, tensorvm_run_tool  # noqa: E402

pytestmark = [requires_vm, pytest.mark.skipif(not getattr(_C, "has_audio", False),
                                              reason="tensorvm built without the audio library "
                                                     "(libsndfile1-dev, libsoxr-dev)")]
sf = pytest.importorskip("soundfile")
soxr = pytest.importorskip("soxr")

# (extension, soundfile subtype, rate, channels)
FORMATS = [("wav", "PCM_16", 44100, 2), ("wav", "PCM_24", 48000, 1), ("wav", "PCM_U8", 8000, 1),
           ("wav", "FLOAT", 22050, 3), ("wav", "PCM_16", 16000, 1), ("flac", "PCM_16", 48000, 2),
           ("flac", "PCM_24", 32000, 1), ("ogg", "VORBIS", 44100, 2), ("ogg", "OPUS", 48000, 1),
           ("mp3", "MPEG_LAYER_III", 44100, 2), ("mp3", "MPEG_LAYER_III", 22050, 1)]


def _ids(fmt):
    ext, subtype, rate, ch = fmt
    return f"{ext}-{subtype}-{rate}-{ch}ch"


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    """espeak-ng's 22050 Hz speech (or, without espeak-ng, a chirp), f32 [-1, 1]."""
    root = tmp_path_factory.mktemp("audio")
    if shutil.which("espeak-ng"):
        subprocess.run(["espeak-ng", "-w", str(root / "say.wav"), "-s", "170",
                        "Audio files of any kind, at any rate, with any number of channels."], check=True)
        x, rate = sf.read(root / "say.wav", dtype="float32")
    else:
        rate = 22050
        t = np.arange(3 * rate) / rate
        x = (0.4 * np.sin(2 * np.pi * (200 + 300 * t) * t)).astype(np.float32)
    return x, rate, root


def _write(speech, fmt):
    x, rate, root = speech
    ext, subtype, to, ch = fmt
    if subtype not in sf.available_subtypes(ext.upper() if ext != "ogg" else "OGG"):
        pytest.skip(f"soundfile cannot write {ext} {subtype} here")
    y = soxr.resample(x, rate, to).astype(np.float32) if to != rate else x
    data = np.stack([y * (0.9 - 0.2 * c) for c in range(ch)], 1) if ch > 1 else y
    path = root / f"{_ids(fmt)}.{ext}"
    sf.write(path, data, to, subtype=subtype)
    return path


def _reference(path):
    """soundfile's samples, the channels averaged, python-soxr HQ to 16 kHz."""
    d, rate = sf.read(path, dtype="float32", always_2d=True)
    mono = d.mean(axis=1).astype(np.float32)
    return soxr.resample(mono, rate, 16000, quality="HQ").astype(np.float32) if rate != 16000 else mono


@pytest.mark.parametrize("fmt", FORMATS, ids=_ids)
def test_features_match_soxr_and_the_feature_extractor(speech, fmt):
    from transformers import WhisperFeatureExtractor

    path = _write(speech, fmt)
    ours, want = _C.read_audio(str(path)), _reference(path)
    assert abs(len(ours) - len(want)) <= 1, (len(ours), len(want))
    fe = WhisperFeatureExtractor(feature_size=80)
    a = fe(ours, sampling_rate=16000, return_tensors="np").input_features
    b = fe(want, sampling_rate=16000, return_tensors="np").input_features
    np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("audio_prog")
    tok = tf.make_whisper_tokenizer(root / "tok")
    ckpt = tf.tiny_whisper_checkpoint(tok, root / "ckpt", seed=4, prompt_config=True)
    return tensorvm.load(import_hf(ckpt, root / "w.tvm"))


def test_both_command_lines_decode_every_format(speech, program, tmp_path, capsys):
    """tensorvm-run and tensorvm run transcribe --audio F give the ids transcribe gives on
    read_audio's samples, for every format."""
    from tensorvm.pycompiler.cli import main

    prompt = program.tokenizer.decoder_prompt("en", "transcribe")
    for fmt in FORMATS:
        path = _write(speech, fmt)
        want = program.run("transcribe", _C.read_audio(str(path))[None, :], np.array([prompt], np.int64), 5, None)
        argv = ["transcribe", "--audio", str(path), "--language", "en", "--arg", "max_new_tokens=5"]
        cpp, py = tmp_path / "c.npz", tmp_path / "p.npz"
        res = subprocess.run([tensorvm_run_tool(), str(program.path), *argv, "--outputs", str(cpp)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, (fmt, res.stderr)
        assert main(["run", str(program.path), *argv, "--outputs", str(py)]) == 0
        with np.load(cpp) as a, np.load(py) as b:
            assert a["arr_0"].tolist() == b["arr_0"].tolist() == want.tolist(), fmt
    capsys.readouterr()


def test_bad_files_name_the_file_and_the_reason(speech, program, tmp_path):
    """Corrupt, truncated and hostile files: an error naming the file and why, never a
    crash (a truncated compressed file may also decode to its first part)."""
    good = _write(speech, ("flac", "PCM_16", 48000, 2))
    mp3 = _write(speech, ("mp3", "MPEG_LAYER_III", 44100, 2))
    rng = np.random.default_rng(30)
    cases = {"noise.flac": rng.integers(0, 256, 5000, dtype=np.uint8).tobytes(), "empty.ogg": b"",
             "text.mp3": b"hello, this is not audio\n" * 40}
    for src in (good, mp3):
        data = src.read_bytes()
        cases[f"cut-{src.name}"] = data[:len(data) // 3]
        cases[f"head-{src.name}"] = data[:60]
        flipped = bytearray(data)
        for i in rng.integers(0, len(data), 200):
            flipped[i] ^= 0xFF
        cases[f"flipped-{src.name}"] = bytes(flipped)
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        res = subprocess.run([tensorvm_run_tool(), str(program.path), "transcribe", "--audio", str(path),
                              "--decoder-ids", "1", "--arg", "max_new_tokens=2"], capture_output=True, text=True,
                             timeout=300)
        assert res.returncode in (0, 1), (name, res.returncode, res.stderr)  # never a signal
        if res.returncode == 1:
            assert f"{path}: " in res.stderr, (name, res.stderr)
        with pytest.raises(RuntimeError, match=str(path)) if res.returncode == 1 else _nothing():
            _C.read_audio(str(path))
    for name, data in [("noise.flac", None), ("empty.ogg", None), ("text.mp3", None)]:
        res = subprocess.run([tensorvm_run_tool(), str(program.path), "transcribe", "--audio", str(tmp_path / name)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 1 and "not audio this build reads (libsndfile: " in res.stderr, res.stderr
    res = subprocess.run([tensorvm_run_tool(), str(program.path), "transcribe", "--audio", "/dev/zero"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "/dev/zero: not a regular file" in res.stderr


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
