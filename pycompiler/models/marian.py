"""Marian (BART-style) encoder-decoder written once with the op front-end.

The same functions run eagerly (C++ or reference ops) or are traced into a program
whose entry functions share one KV cache object:

    encode(input_ids, attention_mask) -> encoder states
    init_cache(encoder_states, rows, max_len) -> KVCache with cross-attention K/V
    prefill(cache, tokens, source_mask) -> KVCache filled for positions [0, n)
    decode_step(cache, tokens, source_mask, position) -> next-token logits
    reorder(cache, index) -> KVCache (beam rows moved)
    generate(input_ids, attention_mask=None, max_length=None, ..., decoder_input_ids=None)
        -> (sequences, sequences_scores or None, scores or None)

This file holds the network only: `generate` is the generation library's
(pycompiler/generation/), built around the functions above.

Cost shape: the encoder and the cross-attention K/V projections run once per
generate call; each decode step feeds one token per row and appends one position
to the self-attention cache, so a generate call costs N + M token passes.
generate takes transformers' generation options as inputs (None is the
checkpoint's default) and runs greedy search, sampling, beam search or beam
sampling inside the program (see docs/generation.md).
Beam rows share their sentence's cross-attention K/V: the decoder's queries of one
sentence are laid out as [sentence, heads, beams, head_dim] against K/V of shape
[sentence, heads, source_len, head_dim], so no K/V is copied per beam.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import Tensor
from .encoder_decoder import build_encoder_decoder, padding_source_mask
from .layers import cross_kv, output_projection, position_rows, post_norm_decoder_layer, post_norm_encoder_layer


@dataclass
class MarianSpec:
    """Everything in a Marian config that changes the computation."""
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_ffn_dim: int
    decoder_ffn_dim: int
    vocab_size: int
    decoder_vocab_size: int
    activation: str
    scale_embedding: bool
    pad_token_id: int
    eos_token_id: int | tuple  # several: a row ends on any (generation_config's list)
    decoder_start_token_id: int
    max_position_embeddings: int
    # weight names, after resolving ties to one stored tensor
    encoder_embed: str = "model.encoder.embed_tokens.weight"
    decoder_embed: str = "model.decoder.embed_tokens.weight"
    lm_head: str = "lm_head.weight"
    # None (f32) or "int8": every linear weight stored as int8 rows with one f32 scale per row
    quantize: str | None = None
    # generate's defaults by transformers' names: the checkpoint's generation_config
    # over transformers' global defaults. The generation library reads it
    # (pycompiler/generation/), meta.json lists it.
    generation: dict = field(default_factory=dict)

    @property
    def embed_scale(self) -> float:
        return math.sqrt(self.d_model) if self.scale_embedding else 1.0


def _decoder_layer(spec: MarianSpec, x, cache, source_mask, self_mask, layer, length):
    """One decoder layer over `length` new positions per row: x [rows, length, d_model]
    (self_mask None for one position: it sees every cached one)."""
    return post_norm_decoder_layer(spec.quantize, spec.activation, x, cache, source_mask, self_mask, spec.d_model,
                                   spec.decoder_heads, "model.decoder.layers.{}.", layer, length)


def _embed_decoder(spec: MarianSpec, tokens, start, end):
    x = T.mul(T.embedding(tokens, T.param(spec.decoder_embed)), spec.embed_scale)
    return T.add(x, position_rows("model.decoder.embed_positions.weight", start, end))


def build(spec: MarianSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the Marian program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd = spec.d_model, spec.encoder_heads, spec.decoder_heads

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        return post_norm_encoder_layer(spec.quantize, spec.activation, x, mask, d, he, "model.encoder.layers.{}.", layer)

    source_mask = padding_source_mask(pb)

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        length = T.size(input_ids, 1)
        x = T.mul(T.embedding(input_ids, T.param(spec.encoder_embed)), spec.embed_scale)
        x = T.add(x, position_rows("model.encoder.embed_positions.weight", 0, length))
        mask = source_mask(attention_mask)
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return x

    def head(x):
        logits = output_projection(spec.quantize, x, spec.lm_head)
        return T.add(logits, T.param("final_logits_bias"))

    return build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask,
                          embed=lambda tokens, start, end: _embed_decoder(spec, tokens, start, end),
                          decoder_layer=lambda *a: _decoder_layer(spec, *a),
                          cross_kv=lambda cache, states, layer: cross_kv(
                              spec.quantize, cache, states, d, hd, "model.decoder.layers.{}.encoder_attn", layer),
                          head=head, width=d, decoder_heads=hd, max_positions=spec.max_position_embeddings)

