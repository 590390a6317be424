"""The functions every decoder-only network is wrapped in, around its `hidden`
function, and the generation library's `generate` over them.

    hidden(cache, tokens [rows, n], mask [rows, >= end], start, end, attn_mask)
        -> the final hidden states [rows, n, width] of tokens at cache slots [start, end)

is the network (models/gpt2.py, llama.py); this adds init_cache, prefill,
prefill_logits (the prompt's last position's logits, the first token's), decode_step,
decode_block (the logits of n new positions: speculative decoding's verify pass)
and forward (the logits of every position) to the ProgramBuilder, and
generate (pycompiler/generation/). `mask` is the attention mask over every cache
slot (1 token, 0 left padding), as generation/model.py describes it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..generation import DecoderOnly, TokenIds, build_generation
from ..types import ObjectType, Tensor
from .layers import causal_mask, output_projection, step_mask
from .spec import ModelSpec

KVCache = ObjectType("KVCache")


@dataclass
class DecoderOnlySpec(ModelSpec):
    """The fields every decoder-only spec has (models/gpt2.py, gpt_neox.py, opt.py, phi.py,
    llama.py), read by build_from_spec; a family's spec adds its own after them."""
    layers: int
    heads: int
    max_position_embeddings: int


def build_decoder_only(pb, hidden, *, layers: int, kv_heads: int, head_dim: int, width: int, vocab_size: int,
                       quantize, lm_head: str, eos, pad: int, max_positions: int, generation: dict,
                       sliding_window: int | None = None, lm_head_bias: str | None = None,
                       logit_softcap: float | None = None):
    """sliding_window: keys older than that many slots are masked (Mistral, Phi-3);
    lm_head_bias: the output projection's bias weight (Phi);
    logit_softcap: the logits become cap * tanh(logits / cap) (Gemma 3's final_logit_softcapping)."""
    @pb.function
    def init_cache(rows: int, max_len: int) -> KVCache:
        """Self-attention room for `rows` rows and max_len slots of the K/V heads in every layer."""
        return T.kv_cache(layers, rows, kv_heads, head_dim, max_len)

    def logits(x):
        y = output_projection(quantize, x, lm_head, lm_head_bias)
        return y if logit_softcap is None else T.mul(T.tanh(T.div(y, logit_softcap)), logit_softcap)

    @pb.function
    def prefill(cache: KVCache, tokens: Tensor, mask: Tensor) -> KVCache:
        """Runs tokens [rows, n] at slots [0, n) in one pass; returns the filled cache."""
        n = T.size(tokens, 1)
        hidden(cache, tokens, mask, 0, n, causal_mask(mask, 0, n, sliding_window))
        return cache

    @pb.function
    def prefill_logits(cache: KVCache, tokens: Tensor, mask: Tensor) -> Tensor:
        """Runs tokens [rows, n] at slots [0, n) in one pass (the cache filled as prefill
        fills it); returns the logits [rows, vocab] of the last position only."""
        n = T.size(tokens, 1)
        x = hidden(cache, tokens, mask, 0, n, causal_mask(mask, 0, n, sliding_window))
        return logits(T.reshape(T.slice(x, 1, T.sub(n, 1), n), [T.size(x, 0), width]))

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, mask: Tensor, position: int) -> Tensor:
        """Logits [rows, vocab] for tokens [rows, 1] at cache slot `position`."""
        x = hidden(cache, tokens, mask, position, T.add(position, 1), step_mask(mask, position, sliding_window))
        return logits(T.reshape(x, [T.size(x, 0), width]))

    @pb.function
    def decode_block(cache: KVCache, tokens: Tensor, mask: Tensor, position: int) -> Tensor:
        """Logits [rows, n, vocab] for tokens [rows, n] at cache slots [position, position + n),
        causal among themselves (speculative decoding's verify pass)."""
        rows, n = T.size(tokens, 0), T.size(tokens, 1)
        end = T.add(position, n)
        x = hidden(cache, tokens, mask, position, end, causal_mask(mask, position, end, sliding_window))
        return T.reshape(logits(T.reshape(x, [T.mul(rows, n), width])), [rows, n, vocab_size])

    @pb.function
    def forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Logits [batch, length, vocab] of every position, as the model's forward pass."""
        rows, n = T.size(input_ids, 0), T.size(input_ids, 1)
        attn_mask = causal_mask(attention_mask, 0, n, sliding_window)
        x = hidden(init_cache(rows, n), input_ids, attention_mask, 0, n, attn_mask)
        return T.reshape(logits(T.reshape(x, [T.mul(rows, n), width])), [rows, n, vocab_size])

    def reorder(cache, index):
        return T.kv_reorder(cache, index)

    ids = TokenIds(eos=eos, pad=pad, vocab_size=vocab_size)
    build_generation(pb, DecoderOnly(init_cache=init_cache, prefill=prefill, decode_step=decode_step, reorder=reorder,
                                     ids=ids, max_positions=max_positions, prefill_logits=prefill_logits,
                                     decode_block=decode_block), generation)
    return pb


def build_from_spec(pb, spec: DecoderOnlySpec, hidden, *, kv_heads: int, head_dim: int, width: int | None = None,
                    **options):
    """build_decoder_only around `hidden` with the spec's layers, vocabulary, output matrix,
    token ids, positions and generate's defaults; width: d_model unless given."""
    return build_decoder_only(pb, hidden, layers=spec.layers, kv_heads=kv_heads, head_dim=head_dim,
                              width=spec.d_model if width is None else width, vocab_size=spec.vocab_size,
                              quantize=spec.quantize, lm_head=spec.lm_head, eos=spec.eos_token_id,
                              pad=spec.pad_token_id, max_positions=spec.max_position_embeddings,
                              generation=spec.generation, **options)
