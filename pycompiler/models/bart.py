"""The BART family (BartForConditionalGeneration, MBartForConditionalGeneration,
PegasusForConditionalGeneration, MarianMTModel): encoder-decoders that differ from one
another only in where their LayerNorms sit and how positions are embedded, and, for
Marian, in a decoder vocabulary that may be its own.

    bart     post-LN layers, layernorm_embedding, learned positions offset by 2
    mbart    pre-LN layers + a final layer_norm per stack, layernorm_embedding, learned offset 2
    pegasus  pre-LN layers + a final layer_norm per stack, sinusoidal positions (offset 0)
    marian   post-LN layers, sinusoidal positions (offset 0); with
             share_encoder_decoder_embeddings false, separate decoder embeddings and
             an output matrix of decoder_vocab_size rows

All: embeddings scaled by sqrt(d_model) when scale_embedding, final_logits_bias.
Positions count from 0 at the first slot whatever the padding, as transformers counts
them (arange, not the token ids).

    encode(input_ids, attention_mask) -> encoder states
    init_cache / prefill / decode_step / generate: models/encoder_decoder.py

The encoder and the cross-attention K/V run once per generate call; each decode step
feeds one token per row, so a call costs N + M token passes. Beam rows share their
sentence's cross-attention K/V (layers.py: the queries of a sentence's beams are its
query positions), so no K/V is copied per beam.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import Tensor
from .encoder_decoder import EncoderDecoderSpec, build_encoder_decoder, padding_source_mask
from .layers import (cross_kv, embed, layer_norm, output_projection, position_rows, post_norm_decoder_layer,
                    post_norm_encoder_layer, pre_norm_decoder_layer, pre_norm_encoder_layer)

ENC, DEC = "model.encoder.", "model.decoder."


@dataclass
class BartSpec(EncoderDecoderSpec):
    """Everything in a BART / MBart / Pegasus / Marian config that changes the computation."""
    scale_embedding: bool
    max_position_embeddings: int
    pre_norm: bool  # pre-LN layers and a final layer_norm closing each stack (MBart, Pegasus)
    layernorm_embedding: bool  # a LayerNorm right after the embeddings in each stack (BART, MBart)
    position_offset: int  # the row of position 0 in the position tables (2 for BART's learned ones)
    decoder_vocab_size: int | None = None  # the output's rows (Marian's own decoder vocabulary); None: vocab_size
    encoder_embed: str = "model.shared.weight"  # after resolving ties to one stored tensor
    decoder_embed: str = "model.shared.weight"

    def __post_init__(self):
        if self.decoder_vocab_size is None:
            self.decoder_vocab_size = self.vocab_size

    @property
    def embed_scale(self) -> float:
        return math.sqrt(self.d_model) if self.scale_embedding else 1.0


def _shift(position, offset: int):
    """position + offset; with no offset (Pegasus, Marian) no instruction."""
    if not offset:
        return position
    return position + offset if isinstance(position, int) else T.add(position, offset)


def _embed(spec: BartSpec, stack: str, table: str, tokens, start, end):
    """Token embeddings plus the positions [start, end), then layernorm_embedding."""
    x = T.mul(embed(spec.quantize, tokens, table), spec.embed_scale)
    off = spec.position_offset
    x = T.add(x, position_rows(stack + "embed_positions.weight", _shift(start, off), _shift(end, off)))
    return layer_norm(x, stack + "layernorm_embedding") if spec.layernorm_embedding else x


def build(spec: BartSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd, q8, act = spec.d_model, spec.encoder_heads, spec.decoder_heads, spec.quantize, spec.activation
    enc_layer = pre_norm_encoder_layer if spec.pre_norm else post_norm_encoder_layer
    dec_layer = pre_norm_decoder_layer if spec.pre_norm else post_norm_decoder_layer

    def final_norm(x, stack):
        return layer_norm(x, stack + "layer_norm") if spec.pre_norm else x

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        return enc_layer(q8, act, x, mask, d, he, ENC + "layers.{}.", layer)

    source_mask = padding_source_mask(pb)

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        x = _embed(spec, ENC, spec.encoder_embed, input_ids, 0, T.size(input_ids, 1))
        mask = source_mask(attention_mask)
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return final_norm(x, ENC)

    def decoder_layer(x, cache, source_mask, self_mask, layer, length):
        return dec_layer(q8, act, x, cache, source_mask, self_mask, d, hd, DEC + "layers.{}.", layer, length)

    def head(x):
        logits = output_projection(q8, final_norm(x, DEC), spec.lm_head)
        return T.add(logits, T.param("final_logits_bias"))

    def encoder_attention_kv(cache, states, layer):
        return cross_kv(q8, cache, states, d, hd, DEC + "layers.{}.encoder_attn", layer)

    return build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask,
                                 embed=lambda tokens, start, end: _embed(spec, DEC, spec.decoder_embed, tokens, start,
                                                                         end),
                                 decoder_layer=decoder_layer, cross_kv=encoder_attention_kv, head=head, width=d,
                                 decoder_heads=hd, max_positions=spec.max_position_embeddings)
