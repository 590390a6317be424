"""The decoder functions every encoder-decoder network is wrapped in, around its
layers, and the generation library's `generate` over them.

The network (models/marian.py, m2m100.py, whisper.py) gives:

    embed(tokens [rows, n], start, end) -> decoder inputs at positions [start, end)
    step_layer(x [rows, 1, d], cache, source_mask, layer) -> x     (an IR function)
    prefill_layer(x [rows, n, d], cache, source_mask, self_mask, layer) -> x
    head(x [rows, d]) -> logits [rows, vocab]   (final norm, output projection, bias)

and its encode, source_mask and init_cache functions; this adds prefill and
decode_step to the ProgramBuilder and generate (pycompiler/generation/).
"""
from __future__ import annotations

from .. import ops as T
from ..generation import EncoderDecoder, TokenIds, build_generation
from ..types import ObjectType, Tensor
from .layers import causal

KVCache = ObjectType("KVCache")


def build_encoder_decoder(pb, *, encode, source_mask, init_cache, embed, step_layer, prefill_layer, head,
                          width: int, decoder_layers: int, ids: TokenIds, max_positions: int, generation: dict,
                          encoder_input: str = "input_ids"):
    """encoder_input: generate's first input, "input_ids" or "input_features" (Whisper's
    log-mel frames; EncoderDecoder in generation/model.py)."""
    @pb.function
    def prefill(cache: KVCache, tokens: Tensor, source_mask: Tensor) -> KVCache:
        """Runs tokens [rows, n] at positions [0, n) through the decoder in one pass,
        causal within them, filling the self-attention cache; returns the cache."""
        n = T.size(tokens, 1)
        x = embed(tokens, 0, n)
        self_mask = causal(n)
        for layer in range(decoder_layers):
            x = prefill_layer(x, cache, source_mask, self_mask, layer)
        return cache

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, source_mask: Tensor, position: int) -> Tensor:
        """Logits [rows, vocab] for tokens [rows, 1] at `position` (0 for the start token)."""
        x = embed(tokens, position, T.add(position, 1))
        for layer in range(decoder_layers):
            x = step_layer(x, cache, source_mask, layer)
        return head(T.reshape(x, [T.size(x, 0), width]))

    def reorder(cache, index):
        return T.kv_reorder(cache, index)

    build_generation(pb, EncoderDecoder(encode=encode, source_mask=source_mask, init_cache=init_cache, prefill=prefill,
                                        decode_step=decode_step, reorder=reorder, ids=ids,
                                        max_positions=max_positions, encoder_input=encoder_input), generation)
    return pb
