"""Phi (PhiForCausalLM): config -> PhiSpec; the rotary frequencies from the loaded
model's rotary_emb."""
from __future__ import annotations

from ..models import phi
from ..models.phi import PhiSpec
from .common import (LINEAR_SUFFIXES, Architecture, UnsupportedConfig, canonical_name, checked_activation,
                     decoder_only_fields, linear_weights_ending, rotary_dim, rotary_from_model, stored_weights)


def spec_from_config(config, gen) -> PhiSpec:
    d, heads = config.hidden_size, config.num_attention_heads
    kv_heads = config.num_key_value_heads or heads
    if d % heads or heads % kv_heads:
        raise UnsupportedConfig(f"import_hf: hidden_size {d}, num_attention_heads {heads} and num_key_value_heads "
                                f"{kv_heads} do not divide")
    if getattr(config, "head_dim", None) not in (None, d // heads):
        raise UnsupportedConfig(f"import_hf: head_dim {config.head_dim} is not hidden_size / num_attention_heads")
    return PhiSpec(
        d_model=d, layers=config.num_hidden_layers, heads=heads, kv_heads=kv_heads,
        vocab_size=config.vocab_size, max_position_embeddings=config.max_position_embeddings,
        eps=config.layer_norm_eps, activation=checked_activation(config.hidden_act, "hidden_act"),
        rotary_dim=rotary_dim(config, d // heads), qk_layernorm=bool(config.qk_layernorm),
        **decoder_only_fields(config, gen, config.vocab_size))


def from_model(spec: PhiSpec, model) -> dict:
    return rotary_from_model(spec, model.model.rotary_emb, spec.rotary_dim)


def weights(spec: PhiSpec, state: dict) -> dict:
    spec.lm_head = canonical_name(state, "lm_head.weight")
    return stored_weights(state)


ARCH = Architecture("PhiForCausalLM", spec_from_config, weights, phi.build, from_model=from_model,
                    linear_weights=linear_weights_ending(*LINEAR_SUFFIXES, "dense.weight"))
