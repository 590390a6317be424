"""T5 (T5ForConditionalGeneration): t5-small-style v1.0 (relu feed-forward, logits
from the tied embedding scaled by d_model**-0.5) and v1.1 / flan-t5 (gated-gelu
feed-forward, untied lm_head, no scaling).

    encode(input_ids, attention_mask) -> encoder states
    init_cache, and prefill / decode_step / generate from models/encoder_decoder.py

Every sublayer is x + f(RMSNorm(x)) (T5LayerNorm: no mean subtraction, no bias);
projections are named q, k, v, o and wi / wi_0, wi_1, wo, without biases; attention
is not scaled by 1/sqrt(d_kv), and its width, heads x d_kv, need not be d_model. There
are no absolute positions: the first layer of each stack turns key - query distances
into a learned per-head bias, shared by all its layers. Here that bias is computed once
per call (encode: [1, heads, n, n], bidirectional; a decode step at position p: the row
of p against keys 0..p, causal) and handed to every layer folded into its attention
mask: padding (encoder) and the future (decoder prefill) as -inf.

The bucketing of distances (transformers' T5Attention._relative_position_bucket,
log-spaced past max_exact) is not recomputed here: every distance beyond
relative_attention_max_distance falls in the last bucket, so the importer stores the
bias of each distance in [-max_distance, max_distance] as a table (computed with
transformers' own function, so bucket boundaries are bit-identical to it) and the
program clamps the distance and picks rows: arange, sub, clamp, embedding.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import Tensor
from .encoder_decoder import build_encoder_decoder, padding_source_mask
from .layers import activation, cross_attention, cross_kv, embed, linear, output_projection, self_attention
from .spec import ModelSpec

# the per-distance bias tables, written by the importer: [2 * max_distance + 1, heads]
# (distance key - query + max_distance) and [max_distance + 1, heads] (query - key)
ENCODER_BIAS, DECODER_BIAS = "encoder.relative_position_bias", "decoder.relative_position_bias"
ENC, DEC = "encoder.block.{}.layer.", "decoder.block.{}.layer."
T5_PROJECTIONS = ("q", "k", "v", "o")
# relative positions put no bound on lengths (transformers checks none either)
NO_POSITION_LIMIT = 1 << 30


@dataclass
class T5Spec(ModelSpec):
    """Everything in a T5 config that changes the computation."""
    d_kv: int
    num_heads: int
    encoder_layers: int
    decoder_layers: int
    gated: bool  # DenseGatedActDense (wi_0, wi_1) rather than DenseActDense (wi)
    eps: float
    scale_decoder_outputs: bool  # v1.0: logits from hidden * d_model**-0.5
    max_distance: int
    decoder_start_token_id: int
    # weight names, after resolving ties to one stored tensor
    encoder_embed: str = "encoder.embed_tokens.weight"
    decoder_embed: str = "decoder.embed_tokens.weight"

    @property
    def inner(self) -> int:
        return self.num_heads * self.d_kv


def _norm(spec: T5Spec, x, name: str, layer=None):
    return T.rms_norm(x, T.param(name + ".weight", layer), eps=spec.eps)


def _feed_forward(spec: T5Spec, x, prefix: str, layer):
    """x + wo(act(wi(h))) or x + wo(act(wi_0(h)) * wi_1(h)), h = RMSNorm(x)."""
    q8, h = spec.quantize, _norm(spec, x, prefix + "layer_norm", layer)
    p = prefix + "DenseReluDense."
    if spec.gated:
        a = T.mul(activation(spec.activation, linear(q8, h, p + "wi_0", layer, False)),
                  linear(q8, h, p + "wi_1", layer, False))
    else:
        a = activation(spec.activation, linear(q8, h, p + "wi", layer, False))
    return T.add(x, linear(q8, a, p + "wo", layer, False))


def _self_attention(spec: T5Spec, x, mask, prefix: str, layer, cache=None):
    h = _norm(spec, x, prefix + "layer_norm", layer)
    return T.add(x, self_attention(spec.quantize, h, mask, spec.inner, spec.num_heads, prefix + "SelfAttention", layer,
                                   cache, proj=T5_PROJECTIONS, bias=False, scale=1.0))


def position_bias(spec: T5Spec, start, end, bidirectional: bool):
    """f32 [1, heads, end - start, end]: the bias of queries [start, end) against keys
    [0, end), with -inf where a causal query would see a later key."""
    q = T.reshape(T.arange(start, end), [T.sub(end, start), 1])
    rel = T.sub(T.reshape(T.arange(0, end), [1, end]), q)  # key - query
    md = spec.max_distance
    if bidirectional:
        rows = T.embedding(T.add(T.clamp(rel, -md, md), md), T.param(ENCODER_BIAS))
    else:
        rows = T.embedding(T.clamp(T.neg(rel), 0, md), T.param(DECODER_BIAS))
    bias = T.unsqueeze(T.permute(rows, [2, 0, 1]), 0)
    return bias if bidirectional else T.where(T.le(rel, 0), bias, -float("inf"))


def build(spec: T5Spec, weights, meta=None) -> ProgramBuilder:
    """Traces the T5 program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    q8 = spec.quantize

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        return _feed_forward(spec, _self_attention(spec, x, mask, ENC + "0.", layer), ENC + "1.", layer)

    source_mask = padding_source_mask(pb)

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        n = T.size(input_ids, 1)
        x = embed(spec.quantize, input_ids, spec.encoder_embed)
        # the position bias plus the padding as -inf: one f32 [batch, heads, n, n] for every layer
        mask = T.add(position_bias(spec, 0, n, True), T.where(source_mask(attention_mask), 0.0, -float("inf")))
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return _norm(spec, x, "encoder.final_layer_norm")

    def decoder_layer(x, cache, source_mask, self_mask, layer, length):
        x = _self_attention(spec, x, self_mask, DEC + "0.", layer, cache)
        h = _norm(spec, x, DEC + "1.layer_norm", layer)
        x = T.add(x, cross_attention(q8, h, cache, source_mask, spec.inner, spec.num_heads,
                                     DEC + "1.EncDecAttention", layer, length, proj=T5_PROJECTIONS, bias=False,
                                     scale=1.0))
        return _feed_forward(spec, x, DEC + "2.", layer)

    def encoder_attention_kv(cache, states, layer):
        return cross_kv(q8, cache, states, spec.inner, spec.num_heads, DEC + "1.EncDecAttention", layer,
                        proj=T5_PROJECTIONS, bias=False)

    def head(x):
        x = _norm(spec, x, "decoder.final_layer_norm")
        if spec.scale_decoder_outputs:
            x = T.mul(x, spec.d_model ** -0.5)
        return output_projection(q8, x, spec.lm_head)

    return build_encoder_decoder(pb, spec, encode=encode, source_mask=source_mask,
                          embed=lambda tokens, start, end: embed(spec.quantize, tokens, spec.decoder_embed),
                          decoder_layer=decoder_layer, cross_kv=encoder_attention_kv, head=head, width=spec.d_model,
                          decoder_heads=spec.num_heads, max_positions=NO_POSITION_LIMIT, head_dim=spec.d_kv,
                          self_mask=lambda start, end: position_bias(spec, start, end, False))
