"""GPT-NeoX / Pythia (GPTNeoXForCausalLM): config -> GPTNeoXSpec; the fused
query_key_value, whose rows are [q; k; v] per head in turn, split into q/k/v_proj; the
rotary frequencies from the loaded model's rotary_emb."""
from __future__ import annotations

import numpy as np

from ..models import gpt_neox
from ..models.gpt_neox import GPTNeoXSpec
from .common import (Architecture, UnsupportedConfig, canonical_name, checked_activation, decoder_only_fields,
                     linear_weights_ending, rotary_dim, rotary_from_model, stored_weights)


def spec_from_config(config, gen) -> GPTNeoXSpec:
    d, heads = config.hidden_size, config.num_attention_heads
    if d % heads:
        raise UnsupportedConfig(f"import_hf: hidden_size {d} is not divisible by num_attention_heads {heads}")
    return GPTNeoXSpec(
        d_model=d, layers=config.num_hidden_layers, heads=heads,
        vocab_size=config.vocab_size, max_position_embeddings=config.max_position_embeddings,
        eps=config.layer_norm_eps, activation=checked_activation(config.hidden_act, "hidden_act"),
        rotary_dim=rotary_dim(config, d // heads), parallel_residual=bool(config.use_parallel_residual),
        attention_bias=bool(getattr(config, "attention_bias", True)),
        **decoder_only_fields(config, gen, config.vocab_size))


def from_model(spec: GPTNeoXSpec, model) -> dict:
    return rotary_from_model(spec, model.gpt_neox.rotary_emb, spec.rotary_dim)


def weights(spec: GPTNeoXSpec, state: dict) -> dict:
    spec.lm_head = canonical_name(state, "lm_head.weight")
    h, hd = spec.heads, spec.d_model // spec.heads
    w = {}
    for name, a in stored_weights(state).items():
        base, fused, what = name.rpartition("attention.query_key_value.")
        if not fused:
            w[name] = a
            continue
        rest = a.shape[1:]
        per_head = a.reshape(h, 3, hd, *rest)  # rows of head i: its q, k, v
        for i, role in enumerate("qkv"):
            w[f"{base}attention.{role}_proj.{what}"] = np.ascontiguousarray(per_head[:, i].reshape(h * hd, *rest))
    return w


ARCH = Architecture("GPTNeoXForCausalLM", spec_from_config, weights, gpt_neox.build, from_model=from_model,
                    linear_weights=linear_weights_ending("_proj.weight", "dense.weight", "dense_h_to_4h.weight",
                                                         "dense_4h_to_h.weight"))
