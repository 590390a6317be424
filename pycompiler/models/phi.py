"""Phi (PhiForCausalLM: phi-1, phi-1.5, phi-2): a decoder-only network whose blocks
run attention and the MLP side by side on one shared LayerNorm of their input
(x + attn(ln(x)) + mlp(ln(x))), with rotary positions on the first
partial_rotary_factor of each head's features, optional LayerNorms of the queries and
keys (qk_layernorm), and an output projection with a bias.

    init_cache, prefill, decode_step, forward, generate: as models/decoder_only.py

The rotary frequencies are the checkpoint model's inv_freq, stored as the weight
`rotary.inv_freq`. Grouped-query attention reads each K/V head for heads / kv_heads
query heads.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import ObjectType, Tensor
from .decoder_only import DecoderOnlySpec, build_from_spec
from .layers import activation, embed, layer_norm, linear, merge_heads, partial_rotary, position_ids, split_heads

KVCache = ObjectType("KVCache")
P = "model.layers.{}."


@dataclass
class PhiSpec(DecoderOnlySpec):
    """Everything in a Phi config that changes the computation."""
    kv_heads: int
    eps: float
    rotary_dim: int  # features of each head that are rotated (head_dim * partial_rotary_factor)
    qk_layernorm: bool = False
    rope_scale: float = 1.0


def build(spec: PhiSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, h, kvh, q8, eps = spec.d_model, spec.heads, spec.kv_heads, spec.quantize, spec.eps
    hd = d // h

    def heads(x, role, count, layer, rows, n):
        x = split_heads(linear(q8, x, P + f"self_attn.{role}_proj", layer), rows, n, count, hd)
        if spec.qk_layernorm and role != "v":
            x = layer_norm(x, P + f"self_attn.{role}_layernorm", layer, eps)
        return x

    @pb.function
    def block(x: Tensor, cache: KVCache, mask: Tensor, positions: Tensor, layer: int) -> Tensor:
        """One block over x [rows, n, d] at the next n cache slots with position ids
        positions [rows, n]; mask [rows, 1, n, keys]."""
        rows, n = T.size(x, 0), T.size(x, 1)
        a = layer_norm(x, P + "input_layernorm", layer, eps)
        inv_freq = T.param("rotary.inv_freq")
        q = partial_rotary(heads(a, "q", h, layer, rows, n), positions, inv_freq, spec.rotary_dim, hd, spec.rope_scale)
        k = partial_rotary(heads(a, "k", kvh, layer, rows, n), positions, inv_freq, spec.rotary_dim, hd,
                           spec.rope_scale)
        k_all, v_all = T.kv_append(cache, layer, k, heads(a, "v", kvh, layer, rows, n))
        attn = linear(q8, merge_heads(T.attention(q, k_all, v_all, mask, scale=hd ** -0.5), rows, n, d),
                      P + "self_attn.dense", layer)
        m = linear(q8, activation(spec.activation, linear(q8, a, P + "mlp.fc1", layer)), P + "mlp.fc2", layer)
        return T.add(T.add(attn, m), x)  # transformers' order: attn + mlp + x

    def hidden(cache, tokens, mask, start, end, attn_mask):
        """The final hidden states [rows, n, d] of tokens at cache slots [start, end)."""
        x = embed(q8, tokens, "model.embed_tokens.weight")
        positions = position_ids(mask, start, end)
        for layer in range(spec.layers):
            x = block(x, cache, attn_mask, positions, layer)
        return layer_norm(x, "model.final_layernorm", None, eps)

    return build_from_spec(pb, spec, hidden, kv_heads=kvh, head_dim=hd, lm_head_bias="lm_head.bias")
