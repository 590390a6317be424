"""OPT (OPTForCausalLM): a decoder-only network of LayerNorm blocks, pre-LN
(do_layer_norm_before, 125m and 1.3b up) or post-LN (350m), learned positions read at
position id + 2, ReLU MLPs, and, when word_embed_proj_dim is not hidden_size (350m),
projections from the embedding width in and out.

    init_cache, prefill, decode_step, forward, generate: as models/decoder_only.py
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import ObjectType, Tensor
from .decoder_only import DecoderOnlySpec, build_from_spec
from .layers import activation, embed, linear, merge_heads, position_ids, split_heads

KVCache = ObjectType("KVCache")
D = "model.decoder."
P = D + "layers.{}."
POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding's offset


@dataclass
class OPTSpec(DecoderOnlySpec):
    """Everything in an OPT config that changes the computation."""
    embed_dim: int  # word_embed_proj_dim: the embeddings' and the output matrix's width
    pre_norm: bool = True  # do_layer_norm_before
    final_norm: bool = True  # pre-LN without _remove_final_layer_norm
    norm_affine: bool = True  # layer_norm_elementwise_affine
    bias: bool = True  # enable_bias


def build(spec: OPTSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, h, q8, b = spec.d_model, spec.heads, spec.quantize, spec.bias
    hd = d // h

    def norm(x, name, layer=None):
        if not spec.norm_affine:
            return T.layer_norm(x, eps=1e-5)
        return T.layer_norm(x, T.param(name + ".weight", layer), T.param(name + ".bias", layer), eps=1e-5)

    def sublayer(x, f, name, layer):
        """x + f(x) with the LayerNorm `name` before f (pre-LN) or after the sum (post-LN)."""
        if spec.pre_norm:
            return T.add(x, f(norm(x, name, layer)))
        return norm(T.add(x, f(x)), name, layer)

    @pb.function
    def block(x: Tensor, cache: KVCache, mask: Tensor, layer: int) -> Tensor:
        """One block over x [rows, n, d] at the next n cache slots; mask [rows, 1, n, keys]."""
        rows, n = T.size(x, 0), T.size(x, 1)

        def attend(a):  # transformers scales the queries, not the scores
            q = split_heads(T.mul(linear(q8, a, P + "self_attn.q_proj", layer, b), hd ** -0.5), rows, n, h, hd)
            k = split_heads(linear(q8, a, P + "self_attn.k_proj", layer, b), rows, n, h, hd)
            v = split_heads(linear(q8, a, P + "self_attn.v_proj", layer, b), rows, n, h, hd)
            k_all, v_all = T.kv_append(cache, layer, k, v)
            a = merge_heads(T.attention(q, k_all, v_all, mask, scale=1.0), rows, n, d)
            return linear(q8, a, P + "self_attn.out_proj", layer, b)

        def mlp(m):
            return linear(q8, activation(spec.activation, linear(q8, m, P + "fc1", layer, b)), P + "fc2", layer, b)

        x = sublayer(x, attend, P + "self_attn_layer_norm", layer)
        return sublayer(x, mlp, P + "final_layer_norm", layer)

    def hidden(cache, tokens, mask, start, end, attn_mask):
        """The final hidden states [rows, n, embed_dim] of tokens at cache slots [start, end)."""
        x = embed(q8, tokens, D + "embed_tokens.weight")
        if spec.embed_dim != d:
            x = linear(q8, x, D + "project_in", None, False)
        positions = T.add(position_ids(mask, start, end), POSITION_OFFSET)
        x = T.add(x, T.embedding(positions, T.param(D + "embed_positions.weight")))
        for layer in range(spec.layers):
            x = block(x, cache, attn_mask, layer)
        if spec.final_norm:
            x = norm(x, D + "final_layer_norm")
        return x if spec.embed_dim == d else linear(q8, x, D + "project_out", None, False)

    return build_from_spec(pb, spec, hidden, kv_heads=h, head_dim=hd, width=spec.embed_dim)
