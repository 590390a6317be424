"""Whisper's tasks around its network (models/whisper.py), written with the op front end
into the same program, over its generate, encode, init_cache and decode_step:

    transcribe(audio [batch, samples], decoder_input_ids, max_new_tokens, num_beams, return_timestamps)
        -> sequences: log_mel (the feature extractor's log-mel spectrogram), then generate
    log_mel_long(audio [batch, samples]) -> features [batch, n_mels, samples // hop]: the
        feature extractor's over the whole recording (truncation=False, padding="longest"),
        what long-form transcription (cli/whisper_longform.h) cuts its 30-s windows from
    detect_language(input_features) -> language token ids [batch], and
    detect_language_audio(audio) -> the same from audio: transformers' detect_language
        (only for a checkpoint whose generation_config has lang_to_id: spec.language_ids)

The importer (importers/whisper.py) stores the mel filterbank (MEL_FILTERS) and the
language ids (LANGUAGE_IDS) as weights.
"""
from __future__ import annotations

from .. import ops as T
from ..builder import ProgramBuilder
from ..control import cond
from ..types import Tensor
from .search import input_names

MEL_FILTERS = "mel_filters"  # [n_fft / 2 + 1, n_mels]: the feature extractor's, written by the importer
LANGUAGE_IDS = "generation_config.lang_to_id"  # i64 [languages], ascending: lang_to_id's token ids
# WhisperFeatureExtractor's framing: 16 kHz audio, n_fft 400, hop 160; the audio is padded
# or cut to the encoder's frames x hop samples (30 s for Whisper's 3000 frames)
SAMPLING_RATE, N_FFT, HOP = 16000, 400, 160


def build_whisper_tasks(pb: ProgramBuilder, spec) -> ProgramBuilder:
    """Adds transcribe, and detect_language(_audio) where spec.language_ids, to pb, which
    holds a Whisper network and its generate (spec: models/whisper.py's WhisperSpec)."""
    generate = pb.functions["generate"]
    names = ["input_features", *input_names()]

    no_stamps = spec.generation.get("no_timestamps_token_id")

    @pb.function(arg_types=["Tensor", "Any", "Any", "Any", "Any"])
    def transcribe(audio, decoder_input_ids, max_new_tokens, num_beams, return_timestamps):
        """audio f32 [batch, samples] at 16 kHz (padded or cut to 30 s: frames x hop) -> sequences
        [batch, length]: the log-mel features, then generate (the prompt, then the
        tokens); options left None are the checkpoint's defaults. With return_timestamps
        a prompt ending in <|notimestamps|> loses it, as WhisperForConditionalGeneration.generate
        drops it from its prompt."""
        features = T.log_mel(audio, T.param(MEL_FILTERS), N_FFT, HOP, spec.frames * HOP)
        if no_stamps is not None:
            prompt = T.if_none(decoder_input_ids, T.full([T.size(audio, 0), 1], spec.decoder_start_token_id,
                                                          dtype="i64"))
            n = T.size(prompt, 1)
            drop = T.logical_and(T.logical_and(T.if_none(return_timestamps, False), T.gt(n, 1)),
                                 T.all(T.eq(T.slice(prompt, 1, T.sub(n, 1), n), no_stamps)))
            decoder_input_ids = cond(drop, without_last_column, as_given, prompt)
        given = {"decoder_input_ids": decoder_input_ids, "max_new_tokens": max_new_tokens, "num_beams": num_beams,
                 "return_timestamps": return_timestamps}
        return generate(features, *(given.get(n) for n in names[1:]))[0]

    @pb.function
    def log_mel_long(audio: Tensor) -> Tensor:
        """audio f32 [batch, samples] at 16 kHz -> log-mel features [batch, n_mels, samples // hop]
        of the whole recording, neither padded nor cut (normalized by its own maximum, as
        WhisperFeatureExtractor(truncation=False, padding="longest") computes them)."""
        return T.log_mel(audio, T.param(MEL_FILTERS), N_FFT, HOP, T.size(audio, 1))

    if spec.language_ids:
        _language_detection(pb, spec)
    return pb


def without_last_column(prompt):
    return T.slice(prompt, 1, 0, T.sub(T.size(prompt, 1), 1))


def as_given(prompt):
    return prompt


def _language_detection(pb: ProgramBuilder, spec):
    """transformers' WhisperForConditionalGeneration.detect_language: one decoder step from
    decoder_start_token_id over the encoder states, the logits of lang_to_id's tokens
    only, argmax per row (ties to the lowest id, as torch's argmax over the masked
    vocabulary). The same encode, init_cache and decode_step as generate."""
    encode, init_cache, decode_step = (pb.functions[n] for n in ("encode", "init_cache", "decode_step"))

    @pb.function
    def detect_language(input_features: Tensor) -> Tensor:
        """log-mel features [batch, n_mels, frames] -> the language token id of each row, i64 [batch]."""
        batch = T.size(input_features, 0)
        ones = T.full([batch, T.size(input_features, 2)], 1, dtype="i64")  # Whisper attends every position
        cache = init_cache(encode(input_features, ones), batch, 1)
        start = T.full([batch, 1], spec.decoder_start_token_id, dtype="i64")
        logits = decode_step(cache, start, ones, 0)
        languages = T.param(LANGUAGE_IDS)
        return T.index_select(languages, 0, T.argmax(T.index_select(logits, 1, languages), -1))

    @pb.function
    def detect_language_audio(audio: Tensor) -> Tensor:
        """audio f32 [batch, samples] at 16 kHz -> detect_language of its log-mel features (as transcribe)."""
        return detect_language(T.log_mel(audio, T.param(MEL_FILTERS), N_FFT, HOP, spec.frames * HOP))
