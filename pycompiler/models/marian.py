"""Marian (BART-style) encoder-decoder written once with the op front-end.

The same functions run eagerly (C++ or reference ops) or are traced into a program
whose entry functions share one KV cache object:

    encode(input_ids, attention_mask) -> encoder states
    init_cache(encoder_states, rows, max_len) -> KVCache with cross-attention K/V
    decode_step(cache, tokens, source_mask, position) -> next-token logits
    generate(input_ids, attention_mask, max_length, max_new_tokens) -> sequences  (greedy)

Cost shape: the encoder and the cross-attention K/V projections run once per
generate call; each decode step feeds one token per row and appends one position
to the self-attention cache, so a generate call costs N + M token passes.
Beam rows share their sentence's cross-attention K/V: the decoder's queries of one
sentence are laid out as [sentence, heads, beams, head_dim] against K/V of shape
[sentence, heads, source_len, head_dim], so no K/V is copied per beam.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import ops as T
from ..builder import ProgramBuilder
from ..control import cond, while_loop
from ..types import ObjectType, Tensor

KVCache = ObjectType("KVCache")

ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "tanh": "tanh"}


class UnsupportedConfig(ValueError):
    """The checkpoint asks for something this importer does not compute."""


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
    eos_token_id: int
    decoder_start_token_id: int
    max_position_embeddings: int
    # weight names, after resolving ties to one stored tensor
    encoder_embed: str = "model.encoder.embed_tokens.weight"
    decoder_embed: str = "model.decoder.embed_tokens.weight"
    lm_head: str = "lm_head.weight"
    # generation defaults (from generation_config)
    max_length: int = 512
    num_beams: int = 1
    bad_words: list = field(default_factory=list)  # single-token bans
    forced_eos_token_id: int | None = None
    min_length: int = 0
    # A log_softmax after the processors: it cannot change a greedy choice, only
    # the scores beam search accumulates.
    renormalize_logits: bool = False

    @property
    def embed_scale(self) -> float:
        return math.sqrt(self.d_model) if self.scale_embedding else 1.0


def _act(spec: MarianSpec, x):
    kind = ACTIVATIONS[spec.activation]
    if kind == "silu":
        return T.silu(x)
    if kind == "gelu":
        return T.gelu(x)
    if kind == "gelu_tanh":
        return T.gelu(x, approximate="tanh")
    if kind == "relu":
        return T.relu(x)
    return T.tanh(x)


def _proj(x, prefix: str, layer):
    return T.linear(x, T.param(prefix + ".weight", layer), T.param(prefix + ".bias", layer))


def _heads(x, rows, length, heads: int, head_dim: int):
    """[rows, length, heads * head_dim] -> [rows, heads, length, head_dim]."""
    return T.transpose(T.reshape(x, [rows, length, heads, head_dim]), 1, 2)


def _merge(x, rows, length, d_model: int):
    """[rows, heads, length, head_dim] -> [rows, length, d_model]."""
    return T.reshape(T.transpose(x, 1, 2), [rows, length, d_model])


def _positions(table: str, start, end):
    """Rows [start, end) of a position table; past its end is an error naming the
    position (a slice would quietly come back short)."""
    return T.index_select(T.param(table), 0, T.arange(start, end))


def _add_norm(x, h, prefix: str, layer):
    return T.layer_norm(T.add(x, h), T.param(prefix + ".weight", layer), T.param(prefix + ".bias", layer), eps=1e-5)


def build(spec: MarianSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the Marian program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd = spec.d_model, spec.encoder_heads, spec.decoder_heads
    dh_e, dh_d = d // he, d // hd
    V = spec.decoder_vocab_size

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        p = "model.encoder.layers.{}."
        rows, length = T.size(x, 0), T.size(x, 1)
        q = _heads(_proj(x, p + "self_attn.q_proj", layer), rows, length, he, dh_e)
        k = _heads(_proj(x, p + "self_attn.k_proj", layer), rows, length, he, dh_e)
        v = _heads(_proj(x, p + "self_attn.v_proj", layer), rows, length, he, dh_e)
        a = _merge(T.attention(q, k, v, mask, scale=dh_e ** -0.5), rows, length, d)
        x = _add_norm(x, _proj(a, p + "self_attn.out_proj", layer), p + "self_attn_layer_norm", layer)
        h = _proj(_act(spec, _proj(x, p + "fc1", layer)), p + "fc2", layer)
        return _add_norm(x, h, p + "final_layer_norm", layer)

    @pb.function
    def source_mask(attention_mask: Tensor) -> Tensor:
        """[batch, source_len] 0/1 -> bool [batch, 1, 1, source_len] (True = attend)."""
        return T.reshape(T.cast(attention_mask, "bool"), [T.size(attention_mask, 0), 1, 1, T.size(attention_mask, 1)])

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        length = T.size(input_ids, 1)
        x = T.mul(T.embedding(input_ids, T.param(spec.encoder_embed)), spec.embed_scale)
        x = T.add(x, _positions("model.encoder.embed_positions.weight", 0, length))
        mask = source_mask(attention_mask)
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return x

    @pb.function
    def init_cache(encoder_states: Tensor, rows: int, max_len: int) -> KVCache:
        """A cache for `rows` decoder rows (batch x beams) with the cross-attention K/V
        of every layer computed now, once, from the encoder states."""
        p = "model.decoder.layers.{}.encoder_attn."
        batch, length = T.size(encoder_states, 0), T.size(encoder_states, 1)
        cache = T.kv_cache(spec.decoder_layers, rows, hd, dh_d, max_len)
        for layer in range(spec.decoder_layers):
            k = _heads(_proj(encoder_states, p + "k_proj", layer), batch, length, hd, dh_d)
            v = _heads(_proj(encoder_states, p + "v_proj", layer), batch, length, hd, dh_d)
            cache = T.kv_set_cross(cache, layer, k, v)
        return cache

    @pb.function
    def decoder_layer(x: Tensor, cache: KVCache, source_mask: Tensor, layer: int) -> Tensor:
        """One decoder layer for one new position per row: x [rows, 1, d_model]."""
        p = "model.decoder.layers.{}."
        rows = T.size(x, 0)
        q = _heads(_proj(x, p + "self_attn.q_proj", layer), rows, 1, hd, dh_d)
        k = _heads(_proj(x, p + "self_attn.k_proj", layer), rows, 1, hd, dh_d)
        v = _heads(_proj(x, p + "self_attn.v_proj", layer), rows, 1, hd, dh_d)
        k_all, v_all = T.kv_append(cache, layer, k, v)
        a = _merge(T.attention(q, k_all, v_all, None, scale=dh_d ** -0.5), rows, 1, d)
        x = _add_norm(x, _proj(a, p + "self_attn.out_proj", layer), p + "self_attn_layer_norm", layer)
        # Cross-attention: the beams of a sentence become its query positions.
        ck, cv = T.kv_cross(cache, layer)
        batch = T.size(ck, 0)
        beams = T.floordiv(rows, batch)
        q = _proj(x, p + "encoder_attn.q_proj", layer)
        q = T.transpose(T.reshape(q, [batch, beams, hd, dh_d]), 1, 2)
        a = T.attention(q, ck, cv, source_mask, scale=dh_d ** -0.5)
        a = T.reshape(T.transpose(a, 1, 2), [rows, 1, d])
        x = _add_norm(x, _proj(a, p + "encoder_attn.out_proj", layer), p + "encoder_attn_layer_norm", layer)
        h = _proj(_act(spec, _proj(x, p + "fc1", layer)), p + "fc2", layer)
        return _add_norm(x, h, p + "final_layer_norm", layer)

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, source_mask: Tensor, position: int) -> Tensor:
        """Logits [rows, vocab] for tokens [rows, 1] at `position` (0 for the start token)."""
        x = T.mul(T.embedding(tokens, T.param(spec.decoder_embed)), spec.embed_scale)
        x = T.add(x, _positions("model.decoder.embed_positions.weight", position, T.add(position, 1)))
        for layer in range(spec.decoder_layers):
            x = decoder_layer(x, cache, source_mask, layer)
        x = T.reshape(x, [T.size(x, 0), d])
        return T.add(T.linear(x, T.param(spec.lm_head)), T.param("final_logits_bias"))

    # ---- greedy search, with Marian's default logits processors

    @pb.function
    def force_eos(logits: Tensor) -> Tensor:
        eos_row = T.eq(T.arange(0, V), spec.forced_eos_token_id)
        return T.where(eos_row, 0.0, T.full_like(logits, -math.inf))

    @pb.function
    def keep_logits(logits: Tensor) -> Tensor:
        return logits

    def process_logits(logits, cur_len, max_length):
        """bad_words_ids (single tokens) then forced EOS at max_length - 1, as transformers orders them."""
        for token in spec.bad_words:
            logits = T.masked_fill(logits, T.eq(T.arange(0, V), token), -math.inf)
        if spec.forced_eos_token_id is not None:
            logits = cond(T.eq(cur_len, T.sub(max_length, 1)), force_eos, keep_logits, logits)
        return logits

    @pb.function
    def greedy_continue(seq: Tensor, unfinished: Tensor, cur_len: int, cache: KVCache, mask: Tensor,
                        max_length: int) -> Tensor:
        """A 0-d bool tensor: some row is unfinished and the length limit is not reached."""
        return T.logical_and(T.any(unfinished), T.lt(cur_len, max_length))

    @pb.function
    def greedy_step(seq: Tensor, unfinished: Tensor, cur_len: int, cache: KVCache, mask: Tensor, max_length: int):
        pos = T.sub(cur_len, 1)
        last = T.slice(seq, 1, pos, cur_len)
        logits = process_logits(decode_step(cache, last, mask, pos), cur_len, max_length)
        nxt = T.where(unfinished, T.argmax(logits, dim=-1), spec.pad_token_id)
        seq = T.concat(seq, T.unsqueeze(nxt, 1), dim=1)
        unfinished = T.logical_and(unfinished, T.ne(nxt, spec.eos_token_id))
        return seq, unfinished, T.add(cur_len, 1), cache, mask, max_length

    @pb.function
    def length_from_new_tokens(max_new_tokens: int, max_length: int) -> int:
        return T.add(max_new_tokens, 1)

    @pb.function
    def length_as_given(max_new_tokens: int, max_length: int) -> int:
        return max_length

    @pb.function
    def generate(input_ids: Tensor, attention_mask: Tensor, max_length: "Any", max_new_tokens: "Any") -> Tensor:
        """Greedy search; max_length counts the decoder start token (as in transformers);
        max_new_tokens, when given, wins. None means the checkpoint's default."""
        new = T.if_none(max_new_tokens, -1)
        limit = cond(T.ge(new, 0), length_from_new_tokens, length_as_given, new,
                     T.if_none(max_length, spec.max_length))
        batch = T.size(input_ids, 0)
        states = encode(input_ids, attention_mask)
        mask = source_mask(attention_mask)
        cache = init_cache(states, batch, limit)
        seq = T.full([batch, 1], spec.decoder_start_token_id, dtype="i64")
        unfinished = T.full([batch], True, dtype="bool")
        seq, unfinished, cur_len, cache, mask, limit = while_loop(greedy_continue, greedy_step, seq, unfinished, 1,
                                                                  cache, mask, limit)
        return seq

    return pb
