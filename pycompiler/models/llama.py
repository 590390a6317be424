"""The Llama family (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM,
GemmaForCausalLM, Phi3ForCausalLM, Qwen3ForCausalLM, SmolLM3ForCausalLM): a
decoder-only network of pre-RMSNorm blocks with rotary positions, grouped-query
attention and a gated MLP (SwiGLU, Gemma's GeGLU). Mistral and Phi-3 may mask keys
older than a sliding window; Gemma scales its embeddings by sqrt(hidden_size) and its
RMSNorms multiply by (1 + weight); Qwen3 RMS-normalizes each head's q and k before
rotary; SmolLM3 leaves rotary out of some layers (NoPE). Gemma 3 (gemma3.py) builds
its blocks from the attention and MLP here.

    init_cache(rows, max_len) -> KVCache (num_key_value_heads per layer)
    prefill(cache, tokens, mask) -> KVCache filled for slots [0, n)
    decode_step(cache, tokens, mask, position) -> next-token logits [rows, vocab]
    forward(input_ids, attention_mask) -> logits [batch, length, vocab]
    generate(input_ids, attention_mask=None, ...)  (the generation library's)

`mask` is the attention mask over every cache slot (1 token, 0 left padding);
position ids come from it as transformers derives them. The rotary frequencies are
the checkpoint model's own inv_freq buffer (rope_scaling already applied), stored
as the weight `rotary.inv_freq`. Grouped-query attention reads each K/V head for
heads / kv_heads query heads; the cache holds only kv_heads.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as T
from ..builder import ProgramBuilder
from ..types import ObjectType, Tensor
from .decoder_only import DecoderOnlySpec, build_from_spec
from .layers import activation, embed, linear, merge_heads, position_ids, split_heads

KVCache = ObjectType("KVCache")
P = "model.layers.{}."


@dataclass
class LlamaSpec(DecoderOnlySpec):
    """Everything in a Llama or Qwen2 config that changes the computation."""
    kv_heads: int
    head_dim: int
    ffn_dim: int
    eps: float
    qkv_bias: bool = False  # Llama's attention_bias, or Qwen2 (q/k/v only)
    o_bias: bool = False
    mlp_bias: bool = False
    sliding_window: int | None = None  # Mistral / Phi-3: keys older than this many slots are masked
    norm_plus_one: bool = False  # Gemma: RMSNorm multiplies by (1 + weight)
    embed_scale: float | None = None  # Gemma: embeddings times sqrt(hidden_size), in f32
    qk_norm: bool = False  # Qwen3, Gemma 3: RMSNorm over each head's q and k before rotary
    nope_layers: tuple = ()  # SmolLM3: the layers without rotary
    rope_scale: float = 1.0  # transformers' attention_scaling (multiplies cos and sin)


def rms_norm(spec: LlamaSpec):
    """norm(x, name, layer=None): RMSNorm with the weight `name.weight` (Gemma's: 1 + weight)."""
    def norm(x, name, layer=None):
        w = T.param(name + ".weight", layer)
        return T.rms_norm(x, T.add(w, 1.0) if spec.norm_plus_one else w, eps=spec.eps)
    return norm


def self_attention(spec: LlamaSpec, x, cache, mask, positions, layer, rope, scale=None):
    """Grouped-query self-attention of x [rows, n, d] over the cache; rope: (the inv_freq
    weight's name, attention_scaling), or None for a layer without rotary."""
    rows, n = T.size(x, 0), T.size(x, 1)
    h, kvh, hd, q8, norm = spec.heads, spec.kv_heads, spec.head_dim, spec.quantize, rms_norm(spec)
    q = split_heads(linear(q8, x, P + "self_attn.q_proj", layer, spec.qkv_bias), rows, n, h, hd)
    k = split_heads(linear(q8, x, P + "self_attn.k_proj", layer, spec.qkv_bias), rows, n, kvh, hd)
    v = split_heads(linear(q8, x, P + "self_attn.v_proj", layer, spec.qkv_bias), rows, n, kvh, hd)
    if spec.qk_norm:
        q, k = norm(q, P + "self_attn.q_norm", layer), norm(k, P + "self_attn.k_norm", layer)
    if rope is not None:
        inv_freq = T.param(rope[0])
        q, k = T.rotary(q, positions, inv_freq, rope[1]), T.rotary(k, positions, inv_freq, rope[1])
    k_all, v_all = T.kv_append(cache, layer, k, v)
    a = merge_heads(T.attention(q, k_all, v_all, mask, scale=hd ** -0.5 if scale is None else scale), rows, n, h * hd)
    return linear(q8, a, P + "self_attn.o_proj", layer, spec.o_bias)


def gated_mlp(spec: LlamaSpec, x, layer):
    q8 = spec.quantize
    gate = activation(spec.activation, linear(q8, x, P + "mlp.gate_proj", layer, spec.mlp_bias))
    x = T.mul(gate, linear(q8, x, P + "mlp.up_proj", layer, spec.mlp_bias))
    return linear(q8, x, P + "mlp.down_proj", layer, spec.mlp_bias)


def build(spec: LlamaSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    norm = rms_norm(spec)

    def make_block(rope):
        def block(x: Tensor, cache: KVCache, mask: Tensor, positions: Tensor, layer: int) -> Tensor:
            """One block over x [rows, n, d] at the next n cache slots with position ids
            positions [rows, n]; mask [rows, 1, n, keys]."""
            x = T.add(x, self_attention(spec, norm(x, P + "input_layernorm", layer), cache, mask, positions, layer,
                                        rope))
            return T.add(x, gated_mlp(spec, norm(x, P + "post_attention_layernorm", layer), layer))
        return block

    # one traced function per kind of layer: a block's layer index is a runtime value
    block = pb.function(make_block(("rotary.inv_freq", spec.rope_scale)), name="block")
    nope_block = pb.function(make_block(None), name="nope_block") if spec.nope_layers else None

    def hidden(cache, tokens, mask, start, end, attn_mask):
        """The final hidden states [rows, n, d] of tokens at cache slots [start, end)."""
        x = embed(spec.quantize, tokens, "model.embed_tokens.weight")
        if spec.embed_scale is not None:
            x = T.mul(x, spec.embed_scale)
        positions = position_ids(mask, start, end)
        for layer in range(spec.layers):
            x = (nope_block if layer in spec.nope_layers else block)(x, cache, attn_mask, positions, layer)
        return norm(x, "model.norm")

    return decoder_only(pb, spec, hidden, sliding_window=spec.sliding_window)


def decoder_only(pb, spec: LlamaSpec, hidden, **options) -> ProgramBuilder:
    """build_from_spec with the spec's K/V heads and head size (Gemma 3 too)."""
    return build_from_spec(pb, spec, hidden, kv_heads=spec.kv_heads, head_dim=spec.head_dim, **options)
