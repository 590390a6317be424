"""Whisper (speech to text) encoder-decoder written once with the op front-end.

    encode(input_features [batch, n_mels, 2 * max_source_positions], attention_mask) -> states
    init_cache, and prefill / decode_step / generate from models/encoder_decoder.py
    generate(input_features, attention_mask=None, ..., decoder_input_ids) -> sequences (with the prompt)

transcribe and detect_language, the tasks around the network, are
generation/whisper_tasks.py's (the importer adds them).

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
from ..types import Tensor
from .encoder_decoder import EncoderDecoderSpec, build_encoder_decoder
from .layers import (cross_kv, embed, layer_norm, output_projection, position_rows, pre_norm_decoder_layer,
                    pre_norm_encoder_layer)

ENC, DEC = "model.encoder.", "model.decoder."


@dataclass
class WhisperSpec(EncoderDecoderSpec):
    """Everything in a Whisper config that changes the computation."""
    num_mel_bins: int
    max_source_positions: int  # encoder positions; the features have twice as many frames
    max_target_positions: int
    # generation_config's lang_to_id ids: generation/whisper_tasks.py builds detect_language when there are some
    language_ids: tuple = ()
    # generation_config's prev_sot_token_id (<|startofprev|>): long-form's condition_on_prev_tokens prompt
    prev_sot_token_id: int | None = None
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


def _embed_decoder(spec: WhisperSpec, tokens, start, end):
    x = embed(spec.quantize, tokens, DEC + "embed_tokens.weight")
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

    return build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask, embed=lambda *a: _embed_decoder(spec, *a),
                                 decoder_layer=lambda *a: _decoder_layer(spec, *a), cross_kv=encoder_attention_kv,
                                 head=head, width=d, decoder_heads=hd, max_positions=spec.max_target_positions,
                                 encoder_input="input_features")
