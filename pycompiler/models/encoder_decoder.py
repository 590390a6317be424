"""The decoder functions every encoder-decoder network is wrapped in, around its
layers, and the generation library's `generate` over them.

The network (models/bart.py, m2m100.py, whisper.py, t5.py) gives plain Python functions:

    embed(tokens [rows, n], start, end) -> decoder inputs at positions [start, end)
    decoder_layer(x [rows, n, d], cache, source_mask, self_mask, layer, n) -> x
        (self_mask None when n is 1, without the hook below: one new position sees every cached one)
    cross_kv(cache, encoder_states, layer) -> cache with that layer's cross K/V
    head(x [rows, d]) -> logits [rows, vocab]   (final norm, output projection, bias)

and its encode and source_mask IR functions (padding_source_mask(pb) adds the usual
source_mask, which every model but Whisper uses); optionally `self_mask(start, end)`, what
every layer's self-attention gets for the new positions [start, end) against the
cached ones (T5: its relative position bias, computed once per call and shared by the
layers; by default causal(n) in a prefill and None in a decode step), and `head_dim`
when heads x head_dim is not the model width (T5's d_kv). This adds to the ProgramBuilder:

    init_cache(encoder_states, rows, max_len)   KV cache, cross K/V of every layer
    decoder_layer(x, cache, source_mask, [self_mask,] layer)  one layer, one position per row
    prefill_layer(x, cache, source_mask, self_mask, layer)  one layer, n positions
    prefill(cache, tokens, source_mask), decode_step(cache, tokens, source_mask, position)
    decode_block(cache, tokens, source_mask, position): n positions at once, every logit

and generate (pycompiler/generation/), whose inputs keep transformers' names (checked
here: no op or function may rename one).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..generation import EncoderDecoder, TokenIds, build_generation, input_names
from ..types import ObjectType, Tensor
from .layers import causal, causal_after, key_mask
from .spec import ModelSpec

KVCache = ObjectType("KVCache")


@dataclass
class EncoderDecoderSpec(ModelSpec):
    """The fields the BART-style encoder-decoder specs share (models/bart.py, m2m100.py,
    whisper.py); a model's spec adds its own after them."""
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    decoder_start_token_id: int


def padding_source_mask(pb):
    """Adds the usual `source_mask` function to pb and returns it: the encoder's
    attention_mask as the boolean mask every attention over the source reads."""
    @pb.function
    def source_mask(attention_mask: Tensor) -> Tensor:
        """[batch, source_len] 0/1 -> bool [batch, 1, 1, source_len] (True = attend)."""
        return key_mask(attention_mask)
    return source_mask


def build_encoder_decoder(pb, spec, *, encode, source_mask, embed, decoder_layer, cross_kv, head, width: int,
                          decoder_heads: int, max_positions: int, encoder_input: str = "input_ids",
                          head_dim: int | None = None, self_mask=None):
    """spec: the model's spec, read for decoder_layers, generation (generate's defaults)
    and the token ids: eos_token_id, pad_token_id, decoder_start_token_id, and the
    decoder's vocabulary, decoder_vocab_size (Marian's own) or else vocab_size.
    encoder_input: generate's first input, "input_ids" or "input_features" (Whisper's
    log-mel frames; EncoderDecoder in generation/model.py)."""
    layer_fn, decoder_layers = decoder_layer, spec.decoder_layers
    ids = TokenIds(eos=spec.eos_token_id, pad=spec.pad_token_id,
                   vocab_size=getattr(spec, "decoder_vocab_size", spec.vocab_size),
                   decoder_start=spec.decoder_start_token_id)
    head_dim = width // decoder_heads if head_dim is None else head_dim

    @pb.function
    def init_cache(encoder_states: Tensor, rows: int, max_len: int) -> KVCache:
        """A cache for `rows` decoder rows (batch x beams) with the cross-attention K/V
        of every layer computed now, once, from the encoder states."""
        cache = T.kv_cache(decoder_layers, rows, decoder_heads, head_dim, max_len)
        for layer in range(decoder_layers):
            cache = cross_kv(cache, encoder_states, layer)
        return cache

    if self_mask is None:
        @pb.function
        def decoder_layer(x: Tensor, cache: KVCache, source_mask: Tensor, layer: int) -> Tensor:
            """One decoder layer for one new position per row: x [rows, 1, d_model]."""
            return layer_fn(x, cache, source_mask, None, layer, 1)
    else:
        @pb.function
        def decoder_layer(x: Tensor, cache: KVCache, source_mask: Tensor, self_mask: Tensor, layer: int) -> Tensor:
            """One decoder layer for one new position per row: x [rows, 1, d_model]."""
            return layer_fn(x, cache, source_mask, self_mask, layer, 1)

    @pb.function
    def prefill_layer(x: Tensor, cache: KVCache, source_mask: Tensor, self_mask: Tensor, layer: int) -> Tensor:
        """One decoder layer over the n prompt positions of each row: x [rows, n, d_model]."""
        return layer_fn(x, cache, source_mask, self_mask, layer, T.size(x, 1))

    @pb.function
    def prefill(cache: KVCache, tokens: Tensor, source_mask: Tensor) -> KVCache:
        """Runs tokens [rows, n] at positions [0, n) through the decoder in one pass,
        causal within them, filling the self-attention cache; returns the cache."""
        n = T.size(tokens, 1)
        x = embed(tokens, 0, n)
        mask = causal(n) if self_mask is None else self_mask(0, n)
        for layer in range(decoder_layers):
            x = prefill_layer(x, cache, source_mask, mask, layer)
        return cache

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, source_mask: Tensor, position: int) -> Tensor:
        """Logits [rows, vocab] for tokens [rows, 1] at `position` (0 for the start token)."""
        x = embed(tokens, position, T.add(position, 1))
        step = () if self_mask is None else (self_mask(position, T.add(position, 1)),)
        for layer in range(decoder_layers):
            x = decoder_layer(x, cache, source_mask, *step, layer)
        return head(T.reshape(x, [T.size(x, 0), width]))

    @pb.function
    def decode_block(cache: KVCache, tokens: Tensor, source_mask: Tensor, position: int) -> Tensor:
        """Logits [rows, n, vocab] for tokens [rows, n] at positions [position, position + n), causal
        among themselves over the cached ones (speculative decoding's verify pass)."""
        n = T.size(tokens, 1)
        end = T.add(position, n)
        x = embed(tokens, position, end)
        mask = causal_after(position, end) if self_mask is None else self_mask(position, end)
        for layer in range(decoder_layers):
            x = prefill_layer(x, cache, source_mask, mask, layer)
        rows = T.size(x, 0)
        return T.reshape(head(T.reshape(x, [T.mul(rows, n), width])), [rows, n, ids.vocab_size])

    def reorder(cache, index):
        return T.kv_reorder(cache, index)

    build_generation(pb, EncoderDecoder(encode=encode, source_mask=source_mask, init_cache=init_cache, prefill=prefill,
                                        decode_step=decode_step, reorder=reorder, ids=ids, decode_block=decode_block,
                                        max_positions=max_positions, encoder_input=encoder_input), spec.generation)
    names = [p.name for p in pb.program().function("generate").params]
    if names != [encoder_input, *input_names()]:
        raise AssertionError(f"generate's inputs were renamed: {names}")
    return pb
