"""GPT-NeoX / Pythia (GPTNeoXForCausalLM): a decoder-only network of pre-LayerNorm
blocks with rotary positions on the first rotary_pct of each head's features, and,
with use_parallel_residual, attention and MLP both read the block's input
(x + attn(ln1(x)) + mlp(ln2(x))); without it they run in turn.

    init_cache, prefill, decode_step, forward, generate: as models/decoder_only.py

The importer (importers/gpt_neox.py) splits the fused query_key_value, interleaved per
head ([q; k; v] of head 0, then head 1, ...), into q/k/v_proj; the rotary frequencies
are the checkpoint model's inv_freq, stored as the weight `rotary.inv_freq`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import ObjectType, Tensor
from .decoder_only import DecoderOnlySpec, build_from_spec
from .layers import activation, embed, layer_norm, linear, merge_heads, partial_rotary, position_ids, split_heads

KVCache = ObjectType("KVCache")
P = "gpt_neox.layers.{}."


@dataclass
class GPTNeoXSpec(DecoderOnlySpec):
    """Everything in a GPT-NeoX config that changes the computation."""
    eps: float
    rotary_dim: int  # features of each head that are rotated (head_dim * rotary_pct)
    parallel_residual: bool = True
    attention_bias: bool = True
    rope_scale: float = 1.0


def build(spec: GPTNeoXSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, h, q8, eps = spec.d_model, spec.heads, spec.quantize, spec.eps
    hd = d // h

    def mlp(x, layer):
        up = activation(spec.activation, linear(q8, x, P + "mlp.dense_h_to_4h", layer))
        return linear(q8, up, P + "mlp.dense_4h_to_h", layer)

    @pb.function
    def block(x: Tensor, cache: KVCache, mask: Tensor, positions: Tensor, layer: int) -> Tensor:
        """One block over x [rows, n, d] at the next n cache slots with position ids
        positions [rows, n]; mask [rows, 1, n, keys]."""
        rows, n = T.size(x, 0), T.size(x, 1)
        a = layer_norm(x, P + "input_layernorm", layer, eps)
        q, k, v = (split_heads(linear(q8, a, P + f"attention.{r}_proj", layer, spec.attention_bias), rows, n, h, hd)
                   for r in "qkv")
        inv_freq = T.param("rotary.inv_freq")
        q = partial_rotary(q, positions, inv_freq, spec.rotary_dim, hd, spec.rope_scale)
        k = partial_rotary(k, positions, inv_freq, spec.rotary_dim, hd, spec.rope_scale)
        k_all, v_all = T.kv_append(cache, layer, k, v)
        a = merge_heads(T.attention(q, k_all, v_all, mask, scale=hd ** -0.5), rows, n, d)
        a = linear(q8, a, P + "attention.dense", layer, spec.attention_bias)
        if spec.parallel_residual:  # transformers' order: mlp + attn + x
            return T.add(T.add(mlp(layer_norm(x, P + "post_attention_layernorm", layer, eps), layer), a), x)
        x = T.add(a, x)
        return T.add(mlp(layer_norm(x, P + "post_attention_layernorm", layer, eps), layer), x)

    def hidden(cache, tokens, mask, start, end, attn_mask):
        """The final hidden states [rows, n, d] of tokens at cache slots [start, end)."""
        x = embed(q8, tokens, "gpt_neox.embed_in.weight")
        positions = position_ids(mask, start, end)
        for layer in range(spec.layers):
            x = block(x, cache, attn_mask, positions, layer)
        return layer_norm(x, "gpt_neox.final_layer_norm", None, eps)

    return build_from_spec(pb, spec, hidden, kv_heads=h, head_dim=hd)
