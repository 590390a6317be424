"""Gemma 3's text model (Gemma3ForCausalLM): Gemma's network (GeGLU, (1 + weight)
RMSNorms, embeddings times sqrt(hidden_size)) with Qwen3's q/k norms, an RMSNorm
after the attention and after the MLP as well as before each, queries scaled by
query_pre_attn_scalar**-0.5, and two kinds of layers: sliding-window layers with
their own rotary base (rope_local_base_freq), and global layers (rope_theta, with
rope scaling where the config has it). The final logits are optionally soft-capped,
cap * tanh(logits / cap) (final_logit_softcapping). attn_logit_softcapping, a Gemma 2
field Gemma 3 configs carry, is not applied: Gemma 3 has none (its q/k norms bound
the scores), and transformers' Gemma3Attention does not pass it to the attention.

The cache keeps every slot of every layer; a sliding layer's mask hides keys older
than the window, which gives what transformers' sliding-window cache gives.
The rotary frequencies are the checkpoint model's own, stored as `rotary.inv_freq`
(global layers) and `rotary.local_inv_freq` (sliding layers).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import Tensor
from .layers import causal_mask, embed, position_ids
from .llama import P, KVCache, LlamaSpec, decoder_only, gated_mlp, rms_norm, self_attention


@dataclass
class Gemma3Spec(LlamaSpec):
    sliding_layers: tuple = ()  # the layers that attend through the sliding window
    query_scale: float = 1.0  # query_pre_attn_scalar**-0.5
    final_softcap: float | None = None
    local_rope_scale: float = 1.0


def build(spec: Gemma3Spec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    norm = rms_norm(spec)

    def make_block(rope):
        def block(x: Tensor, cache: KVCache, mask: Tensor, positions: Tensor, layer: int) -> Tensor:
            a = self_attention(spec, norm(x, P + "input_layernorm", layer), cache, mask, positions, layer, rope,
                               spec.query_scale)
            x = T.add(x, norm(a, P + "post_attention_layernorm", layer))
            m = gated_mlp(spec, norm(x, P + "pre_feedforward_layernorm", layer), layer)
            return T.add(x, norm(m, P + "post_feedforward_layernorm", layer))
        return block

    # one traced function per kind of layer present (a block's layer index is a runtime value)
    sliding = set(spec.sliding_layers)
    local = pb.function(make_block(("rotary.local_inv_freq", spec.local_rope_scale)), name="sliding_block") \
        if sliding else None
    full = pb.function(make_block(("rotary.inv_freq", spec.rope_scale)), name="block") \
        if len(sliding) < spec.layers else None

    def hidden(cache, tokens, mask, start, end, attn_mask):
        x = T.mul(embed(spec.quantize, tokens, "model.embed_tokens.weight"), spec.embed_scale)
        positions = position_ids(mask, start, end)
        local_mask = causal_mask(mask, start, end, spec.sliding_window) if local is not None else None
        for layer in range(spec.layers):
            if layer in sliding:
                x = local(x, cache, local_mask, positions, layer)
            else:
                x = full(x, cache, attn_mask, positions, layer)
        return norm(x, "model.norm")

    return decoder_only(pb, spec, hidden, logit_softcap=spec.final_softcap)
