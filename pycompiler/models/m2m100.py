"""M2M100 / NLLB (M2M100ForConditionalGeneration): a pre-LayerNorm encoder-decoder
of the BART family with final encoder and decoder layer norms, scaled embeddings and
sinusoidal positions offset by the padding index.

    encode(input_ids, attention_mask) -> encoder states
    init_cache(encoder_states, rows, max_len) -> KVCache with cross-attention K/V
    prefill(cache, tokens, source_mask) -> KVCache filled for positions [0, n)
    decode_step(cache, tokens, source_mask, position) -> next-token logits
    generate(input_ids, attention_mask=None, ..., forced_bos_token_id=None, decoder_input_ids=None)

Positions follow the token ids as transformers computes them: a token's position
is padding_idx + its count of non-pad tokens so far (a pad token gets padding_idx,
a zero row of the table). The target language is forced_bos_token_id, a run-time
input of generate, so one program serves every target language.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import Tensor
from .encoder_decoder import EncoderDecoderSpec, build_encoder_decoder, padding_source_mask
from .layers import cross_kv, embed, layer_norm, output_projection, pre_norm_decoder_layer, pre_norm_encoder_layer

POSITIONS = "model.embed_positions.weight"  # the sinusoidal table, written by the importer
ENC, DEC = "model.encoder.layers.{}.", "model.decoder.layers.{}."


@dataclass
class M2M100Spec(EncoderDecoderSpec):
    """Everything in an M2M100 config that changes the computation."""
    scale_embedding: bool
    max_position_embeddings: int
    embed: str = "model.shared.weight"  # after resolving ties to one stored tensor

    @property
    def embed_scale(self) -> float:
        return math.sqrt(self.d_model) if self.scale_embedding else 1.0


def _embed(spec, tokens, positions):
    x = T.mul(embed(spec.quantize, tokens, spec.embed), spec.embed_scale)
    return T.add(x, T.embedding(positions, T.param(POSITIONS)))


def _token_positions(tokens, pad: int, past):
    """transformers' create_position_ids_from_input_ids: (cumsum(token != pad) + past)
    * (token != pad) + pad."""
    real = T.cast(T.ne(tokens, pad), "i64")
    return T.add(T.mul(T.add(T.cumsum(real, 1), past), real), pad)


def build(spec: M2M100Spec, weights, meta=None) -> ProgramBuilder:
    """Traces the M2M100 program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd, q8 = spec.d_model, spec.encoder_heads, spec.decoder_heads, spec.quantize

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        return pre_norm_encoder_layer(q8, spec.activation, x, mask, d, he, ENC, layer)

    source_mask = padding_source_mask(pb)

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        x = _embed(spec, input_ids, _token_positions(input_ids, spec.pad_token_id, 0))
        mask = source_mask(attention_mask)
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return layer_norm(x, "model.encoder.layer_norm")

    def decoder_layer(x, cache, source_mask, self_mask, layer, length):
        return pre_norm_decoder_layer(q8, spec.activation, x, cache, source_mask, self_mask, d, hd, DEC, layer, length)

    def embed(tokens, start, end):
        return _embed(spec, tokens, _token_positions(tokens, spec.pad_token_id, start))

    def head(x):
        return output_projection(q8, layer_norm(x, "model.decoder.layer_norm"), spec.lm_head)

    def encoder_attention_kv(cache, states, layer):
        return cross_kv(q8, cache, states, d, hd, DEC + "encoder_attn", layer)

    return build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask, embed=embed,
                                 decoder_layer=decoder_layer, cross_kv=encoder_attention_kv, head=head, width=d,
                                 decoder_heads=hd, max_positions=spec.max_position_embeddings)
