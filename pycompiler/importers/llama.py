"""Llama, Qwen2, Mistral, Gemma, Phi-3, Qwen3 and SmolLM3 (their ...ForCausalLM): config -> LlamaSpec.
Phi-3's fused qkv_proj and gate_up_proj are split into Llama's q/k/v_proj and
gate/up_proj (import's optimize merges the projections back where it pays). The
rotary frequencies are read from the loaded model's rotary_emb (inv_freq with
rope_scaling applied, and its attention_scaling), so every static rope type
transformers computes is imported as transformers computes it."""
from __future__ import annotations

import numpy as np

from ..models import llama
from ..models.llama import LlamaSpec
from .common import (Architecture, UnsupportedConfig, canonical_name, check_static_rope, checked_activation,
                     decoder_only_fields, rotary_from_model, spec_meta, stored_weights)

LAYER_TYPES = ("full_attention", "sliding_attention")


def _spec(config, gen, *, qkv_bias: bool, o_bias: bool, act: str | None = None, spec_class=LlamaSpec,
          **extra) -> LlamaSpec:
    act = checked_activation(act or config.hidden_act, "hidden_act")
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    if heads % kv_heads:
        raise UnsupportedConfig(f"import_hf: num_attention_heads {heads} is not a multiple of "
                                f"num_key_value_heads {kv_heads}")
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    if head_dim % 2:
        raise UnsupportedConfig(f"import_hf: head_dim {head_dim} is odd; rotary embedding needs pairs")
    rope = dict(getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {})
    # Gemma 3: one set of rope parameters per layer type
    for r in [rope[t] for t in LAYER_TYPES if isinstance(rope.get(t), dict)] or [rope]:
        check_static_rope(r.get("rope_type", r.get("type", "default")))
    if getattr(config, "pretraining_tp", 1) not in (None, 1):
        raise UnsupportedConfig("import_hf: pretraining_tp > 1 is not supported")
    if getattr(config, "use_sliding_window", False) and any(
            t == "sliding_attention" for t in (getattr(config, "layer_types", None) or [])):
        raise UnsupportedConfig("import_hf: sliding-window attention layers are not supported")
    return spec_class(
        d_model=config.hidden_size, layers=config.num_hidden_layers, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, ffn_dim=config.intermediate_size, vocab_size=config.vocab_size,
        max_position_embeddings=config.max_position_embeddings, eps=config.rms_norm_eps, activation=act,
        qkv_bias=qkv_bias, o_bias=o_bias, mlp_bias=bool(getattr(config, "mlp_bias", False)),
        **decoder_only_fields(config, gen, config.vocab_size), **extra)


def from_model(spec: LlamaSpec, model) -> dict:
    """The rotary embedding's frequencies and scaling, as the loaded model computes them."""
    return rotary_from_model(spec, model.model.rotary_emb, spec.head_dim, " (partial rotary is not supported)")


def weights(spec: LlamaSpec, state: dict) -> dict:
    spec.lm_head = canonical_name(state, "lm_head.weight")
    return _split_fused(spec, {n: a for n, a in stored_weights(state).items() if "rotary_emb" not in n})


def _split_fused(spec: LlamaSpec, w: dict) -> dict:
    """Phi-3's qkv_proj [q; k; v] and gate_up_proj [gate; up] (rows) as Llama's projections."""
    q, kv, f = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim, spec.ffn_dim
    out = {}
    for name, a in w.items():
        if name.endswith("self_attn.qkv_proj.weight"):
            if a.shape[0] != q + 2 * kv:
                raise UnsupportedConfig(f"import_hf: {name} has {a.shape[0]} rows, expected {q + 2 * kv}")
            base = name[:-len("qkv_proj.weight")]
            out.update({base + "q_proj.weight": a[:q], base + "k_proj.weight": a[q:q + kv],
                        base + "v_proj.weight": a[q + kv:]})
        elif name.endswith("mlp.gate_up_proj.weight"):
            if a.shape[0] != 2 * f:
                raise UnsupportedConfig(f"import_hf: {name} has {a.shape[0]} rows, expected {2 * f}")
            base = name[:-len("gate_up_proj.weight")]
            out.update({base + "gate_proj.weight": a[:f], base + "up_proj.weight": a[f:]})
        else:
            out[name] = a
    return out


def meta(spec: LlamaSpec) -> dict:
    return {**spec_meta(spec), "num_key_value_heads": spec.kv_heads}


def _llama_spec(config, gen) -> LlamaSpec:
    bias = bool(getattr(config, "attention_bias", False))
    return _spec(config, gen, qkv_bias=bias, o_bias=bias)


def _qwen2_spec(config, gen) -> LlamaSpec:
    return _spec(config, gen, qkv_bias=True, o_bias=False)  # Qwen2: q/k/v biases, none on o_proj


def _sliding_window(config):
    window = getattr(config, "sliding_window", None)
    if window is not None and (not isinstance(window, int) or window < 1):
        raise UnsupportedConfig(f"import_hf: sliding_window {window!r} is not a positive int")
    return window


def _mistral_spec(config, gen) -> LlamaSpec:
    return _spec(config, gen, qkv_bias=False, o_bias=False, sliding_window=_sliding_window(config))


def _gemma_spec(config, gen) -> LlamaSpec:
    bias = bool(getattr(config, "attention_bias", False))
    # transformers' embed_scale: a tensor of hidden_size**0.5 in the embedding's dtype (f32)
    return _spec(config, gen, qkv_bias=bias, o_bias=bias, norm_plus_one=True,
                 embed_scale=float(np.float32(config.hidden_size ** 0.5)))


def _phi3_spec(config, gen) -> LlamaSpec:
    return _spec(config, gen, qkv_bias=False, o_bias=False, sliding_window=_sliding_window(config))


def _qwen3_spec(config, gen) -> LlamaSpec:
    bias = bool(getattr(config, "attention_bias", False))
    return _spec(config, gen, qkv_bias=bias, o_bias=bias, qk_norm=True)


def _smollm3_spec(config, gen) -> LlamaSpec:
    bias = bool(getattr(config, "attention_bias", False))
    rope = list(config.no_rope_layers)  # 1: the layer uses rotary
    if len(rope) < config.num_hidden_layers:
        raise UnsupportedConfig(f"import_hf: no_rope_layers has {len(rope)} entries for "
                                f"{config.num_hidden_layers} layers")
    return _spec(config, gen, qkv_bias=bias, o_bias=bias,
                 nope_layers=tuple(i for i in range(config.num_hidden_layers) if not rope[i]))


LLAMA = Architecture("LlamaForCausalLM", _llama_spec, weights, llama.build, meta=meta, from_model=from_model)
QWEN2 = Architecture("Qwen2ForCausalLM", _qwen2_spec, weights, llama.build, meta=meta, from_model=from_model)
MISTRAL = Architecture("MistralForCausalLM", _mistral_spec, weights, llama.build, meta=meta, from_model=from_model)
GEMMA = Architecture("GemmaForCausalLM", _gemma_spec, weights, llama.build, meta=meta, from_model=from_model)
PHI3 = Architecture("Phi3ForCausalLM", _phi3_spec, weights, llama.build, meta=meta, from_model=from_model)
QWEN3 = Architecture("Qwen3ForCausalLM", _qwen3_spec, weights, llama.build, meta=meta, from_model=from_model)
SMOLLM3 = Architecture("SmolLM3ForCausalLM", _smollm3_spec, weights, llama.build, meta=meta, from_model=from_model)
