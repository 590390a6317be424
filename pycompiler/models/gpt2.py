"""GPT-2 (GPT2LMHeadModel): a decoder-only network of pre-LayerNorm blocks with
learned positions and tied output embeddings.

    init_cache(rows, max_len) -> KVCache
    prefill(cache, tokens, mask) -> KVCache filled for slots [0, n)
    decode_step(cache, tokens, mask, position) -> next-token logits [rows, vocab]
    forward(input_ids, attention_mask) -> logits [batch, length, vocab]
    generate(input_ids, attention_mask=None, ...)  (the generation library's)

`mask` is the attention mask over every cache slot, [rows, >= slots used]: 1 for a
token, 0 for left padding. Position ids come from it as transformers derives them.
The importer (importers/gpt2.py) splits c_attn into q/k/v projections and stores
every Conv1D weight transposed, as linear's [out, in].
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import ObjectType, Tensor
from .decoder_only import DecoderOnlySpec, build_from_spec
from .layers import activation, embed, linear, merge_heads, position_ids, split_heads

KVCache = ObjectType("KVCache")
P = "transformer.h.{}."


@dataclass
class GPT2Spec(DecoderOnlySpec):
    """Everything in a GPT-2 config that changes the computation."""
    eps: float
    scale_attention: bool = True

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


def _norm(x, name: str, layer, eps: float):
    return T.layer_norm(x, T.param(name + ".weight", layer), T.param(name + ".bias", layer), eps=eps)


def build(spec: GPT2Spec, weights, meta=None) -> ProgramBuilder:
    """Traces the GPT-2 program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, h, hd, q8 = spec.d_model, spec.heads, spec.head_dim, spec.quantize
    scale = hd ** -0.5 if spec.scale_attention else 1.0

    @pb.function
    def block(x: Tensor, cache: KVCache, mask: Tensor, layer: int) -> Tensor:
        """One block over x [rows, n, d] at the next n cache slots; mask [rows, 1, n, keys]."""
        rows, n = T.size(x, 0), T.size(x, 1)
        a = _norm(x, P + "ln_1", layer, spec.eps)
        q = split_heads(linear(q8, a, P + "attn.q_proj", layer), rows, n, h, hd)
        k = split_heads(linear(q8, a, P + "attn.k_proj", layer), rows, n, h, hd)
        v = split_heads(linear(q8, a, P + "attn.v_proj", layer), rows, n, h, hd)
        k_all, v_all = T.kv_append(cache, layer, k, v)
        a = merge_heads(T.attention(q, k_all, v_all, mask, scale=scale), rows, n, d)
        x = T.add(x, linear(q8, a, P + "attn.o_proj", layer))
        m = _norm(x, P + "ln_2", layer, spec.eps)
        m = linear(q8, activation(spec.activation, linear(q8, m, P + "mlp.fc_in", layer)), P + "mlp.fc_out", layer)
        return T.add(x, m)

    def hidden(cache, tokens, mask, start, end, attn_mask):
        """The final hidden states [rows, n, d] of tokens at cache slots [start, end)."""
        x = T.add(embed(q8, tokens, "transformer.wte.weight"),
                  T.embedding(position_ids(mask, start, end), T.param("transformer.wpe.weight")))
        for layer in range(spec.layers):
            x = block(x, cache, attn_mask, layer)
        return _norm(x, "transformer.ln_f", None, spec.eps)

    return build_from_spec(pb, spec, hidden, kv_heads=h, head_dim=hd)
