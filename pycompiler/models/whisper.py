"""Whisper (speech to text) encoder-decoder written once with the op front-end.

    encode(input_features [batch, n_mels, 2 * max_source_positions], attention_mask) -> states
    init_cache, and prefill / decode_step / generate from models/encoder_decoder.py
    generate(input_features, attention_mask=None, ..., decoder_input_ids) -> sequences (with the prompt)
    transcribe(audio [batch, samples], decoder_input_ids, max_new_tokens, num_beams) -> sequences:
        log_mel (the feature extractor's log-mel spectrogram), then generate
    detect_language(input_features) -> language token ids [batch], and
    detect_language_audio(audio) -> the same from audio: transformers' detect_language
        (only for a checkpoint whose generation_config has lang_to_id)

The encoder: conv1 (kernel 3) + gelu, conv2 (kernel 3, stride 2) + gelu, plus the
checkpoint's encoder position table, pre-LayerNorm layers and a final LayerNorm.
The decoder: token embeddings plus learned positions, pre-LayerNorm layers with
self- and cross-attention, a final LayerNorm, logits from the tied embedding
(proj_out). k_proj has no bias. The attention blocks are layers.py's (the BART
family's).

transformers ignores Whisper's attention_mask (the features are always 30 s), so
does this model: source_mask hands the mask through unused and cross-attention sees
every encoder position. The task prompt (<|startoftranscript|>, language, task,
<|notimestamps|>) is generate's decoder_input_ids, prefilled in one pass by the
generation library; suppress_tokens / begin_suppress_tokens come from the
checkpoint's generation_config through the library's processors.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..generation import input_names
from ..types import Tensor
from .encoder_decoder import EncoderDecoderSpec, build_encoder_decoder
from .layers import (cross_kv, layer_norm, output_projection, position_rows, pre_norm_decoder_layer,
                     pre_norm_encoder_layer)

ENC, DEC = "model.encoder.", "model.decoder."
MEL_FILTERS = "mel_filters"  # [n_fft / 2 + 1, n_mels]: the feature extractor's, written by the importer
LANGUAGE_IDS = "generation_config.lang_to_id"  # i64 [languages], ascending: lang_to_id's token ids
# WhisperFeatureExtractor's framing: 16 kHz audio, n_fft 400, hop 160; the audio is padded
# or cut to the encoder's frames x hop samples (30 s for Whisper's 3000 frames)
SAMPLING_RATE, N_FFT, HOP = 16000, 400, 160


@dataclass
class WhisperSpec(EncoderDecoderSpec):
    """Everything in a Whisper config that changes the computation."""
    num_mel_bins: int
    max_source_positions: int  # encoder positions; the features have twice as many frames
    max_target_positions: int
    language_ids: tuple = ()  # generation_config's lang_to_id ids: detect_language is built when there are some
    lm_head = "proj_out.weight"  # tied to the decoder's embed_tokens: resolved by the importer

    @property
    def frames(self) -> int:
        return 2 * self.max_source_positions


def _decoder_layer(spec: WhisperSpec, x, cache, source_mask, self_mask, layer, length):
    """One pre-LayerNorm decoder layer over `length` new positions per row (self_mask
    None for one position). Cross-attention has no mask: every encoder position counts.
    Whisper's k_proj has no bias."""
    return pre_norm_decoder_layer(spec.quantize, spec.activation, x, cache, None, self_mask, spec.d_model,
                                  spec.decoder_heads, DEC + "layers.{}.", layer, length, k_bias=False)


def _embed_decoder(tokens, start, end):
    x = T.embedding(tokens, T.param(DEC + "embed_tokens.weight"))
    return T.add(x, position_rows(DEC + "embed_positions.weight", start, end))


def build(spec: WhisperSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the Whisper program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd = spec.d_model, spec.encoder_heads, spec.decoder_heads

    @pb.function
    def encoder_layer(x: Tensor, layer: int) -> Tensor:
        return pre_norm_encoder_layer(spec.quantize, spec.activation, x, None, d, he, ENC + "layers.{}.", layer,
                                      k_bias=False)

    @pb.function
    def source_mask(attention_mask: Tensor) -> Tensor:
        """Whisper attends every encoder position (transformers ignores the mask too)."""
        return attention_mask

    @pb.function
    def encode(input_features: Tensor, attention_mask: Tensor) -> Tensor:
        """log-mel features [batch, n_mels, frames] -> encoder states [batch, frames / 2, d_model]."""
        T.check(T.logical_and(T.eq(T.size(input_features, 1), spec.num_mel_bins),
                              T.eq(T.size(input_features, 2), spec.frames)),
                f"generate: Whisper expects input_features [batch, {spec.num_mel_bins}, {spec.frames}] "
                "(30 s of log-mel frames, padded)")
        x = T.gelu(T.conv1d(input_features, T.param(ENC + "conv1.weight"), T.param(ENC + "conv1.bias"), 1, 1))
        x = T.gelu(T.conv1d(x, T.param(ENC + "conv2.weight"), T.param(ENC + "conv2.bias"), 2, 1))
        x = T.add(T.transpose(x, 1, 2), T.param(ENC + "embed_positions.weight"))
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, layer)
        return layer_norm(x, ENC + "layer_norm")

    def head(x):
        return output_projection(spec.quantize, layer_norm(x, DEC + "layer_norm"), spec.lm_head)

    def encoder_attention_kv(cache, states, layer):
        return cross_kv(spec.quantize, cache, states, d, hd, DEC + "layers.{}.encoder_attn", layer, k_bias=False)

    build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask, embed=_embed_decoder,
                          decoder_layer=lambda *a: _decoder_layer(spec, *a), cross_kv=encoder_attention_kv, head=head,
                          width=d, decoder_heads=hd, max_positions=spec.max_target_positions,
                          encoder_input="input_features")
    generate = pb.functions["generate"]
    names = ["input_features", *input_names()]

    @pb.function(arg_types=["Tensor", "Any", "Any", "Any"])
    def transcribe(audio, decoder_input_ids, max_new_tokens, num_beams):
        """audio f32 [batch, samples] at 16 kHz (padded or cut to 30 s: frames x hop) -> sequences
        [batch, length]: the log-mel features, then generate (the prompt, then the
        tokens); options left None are the checkpoint's defaults."""
        features = T.log_mel(audio, T.param(MEL_FILTERS), N_FFT, HOP, spec.frames * HOP)
        given = {"decoder_input_ids": decoder_input_ids, "max_new_tokens": max_new_tokens, "num_beams": num_beams}
        return generate(features, *(given.get(n) for n in names[1:]))[0]

    if spec.language_ids:
        _language_detection(pb, spec)
    return pb


def _language_detection(pb: ProgramBuilder, spec: WhisperSpec):
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
