"""log_mel: the C++ kernel against transformers' WhisperFeatureExtractor (to 1e-4) and
the numpy reference, on random audio, silence, and audio shorter or longer than 30 s."""
import numpy as np
import pytest

from tensorvm._C import call_op
from op_checks import check, check_error, check_signature

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def extractor():
    return transformers.WhisperFeatureExtractor()


def filters(fe):
    return fe.mel_filters.astype(np.float32)


def extract(fe, audio):
    return fe(list(audio), sampling_rate=16000, return_tensors="np").input_features


def test_signature_matches_reference():
    check_signature("log_mel", "audio")


@pytest.mark.parametrize("samples", [16000 * 7 + 3, 480000, 480000 + 12345, 1])
def test_matches_feature_extractor(rng, extractor, samples):
    audio = (rng.standard_normal((2, samples)) * 0.1).astype(np.float32)
    audio[1] *= 0.01  # a quieter row: each row has its own max - 8 floor
    got = check("log_mel", audio, filters(extractor), rtol=0, atol=1e-5)
    assert got.shape == (2, 80, 3000)
    np.testing.assert_allclose(got, extract(extractor, audio), rtol=0, atol=1e-4)


def test_silence_and_a_tone(rng, extractor):
    t = np.arange(16000 * 3) / 16000
    audio = np.stack([np.zeros_like(t), 0.5 * np.sin(2 * np.pi * 440 * t)]).astype(np.float32)
    got = check("log_mel", audio, filters(extractor), rtol=0, atol=1e-5)
    np.testing.assert_allclose(got, extract(extractor, audio), rtol=0, atol=1e-4)
    np.testing.assert_array_equal(got[0], np.float32(-1.5))  # log10(1e-10) = -10, (-10 + 4) / 4


def test_128_mel_bins_and_other_sizes(rng):
    fe = transformers.WhisperFeatureExtractor(feature_size=128)
    audio = (rng.standard_normal((1, 20000)) * 0.2).astype(np.float32)
    np.testing.assert_allclose(call_op("log_mel", audio, filters(fe)), extract(fe, audio), rtol=0, atol=1e-4)
    small = rng.random((9, 5)).astype(np.float32)
    got = check("log_mel", audio, small, 16, 4, 37, rtol=0, atol=1e-5)
    assert got.shape == (1, 5, 9)


def test_bad_inputs(rng, extractor):
    f, audio = filters(extractor), np.zeros((1, 100), np.float32)
    check_error("log_mel", np.zeros(100, np.float32), f, match="audio must be f32 \\[batch, samples\\]")
    check_error("log_mel", audio.astype(np.int64), f, match="audio must be f32")
    check_error("log_mel", audio, f[:200], match="filters must be f32 \\[201, n_mels\\]")
    check_error("log_mel", audio, f, 401, match="n_fft must be even")
    check_error("log_mel", audio, f, 400, 0, match="hop_length must be at least 1")
    check_error("log_mel", audio, f, 400, 160, 100, match="n_samples must be at least hop_length")
