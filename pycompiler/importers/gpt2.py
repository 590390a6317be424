"""GPT-2 (GPT2LMHeadModel): config -> GPT2Spec; c_attn split into q/k/v and every
Conv1D weight ([in, out], x @ W) transposed to linear's [out, in]."""
from __future__ import annotations

import numpy as np

from ..models import gpt2
from ..models.gpt2 import GPT2Spec
from .common import (Architecture, UnsupportedConfig, canonical_name, checked_activation, decoder_only_fields,
                     linear_weights_ending, stored_weights)


def spec_from_config(config, gen) -> GPT2Spec:
    act = checked_activation(config.activation_function)
    if config.n_embd % config.n_head:
        raise UnsupportedConfig(f"import_hf: n_embd {config.n_embd} is not divisible by n_head {config.n_head}")
    for flag in ("scale_attn_by_inverse_layer_idx", "add_cross_attention"):
        if getattr(config, flag, False):
            raise UnsupportedConfig(f"import_hf: GPT-2 with {flag}=True is not supported")
    # reorder_and_upcast_attn only changes fp16 rounding: every product here is f32 already
    return GPT2Spec(
        d_model=config.n_embd, layers=config.n_layer, heads=config.n_head, vocab_size=config.vocab_size,
        max_position_embeddings=config.n_positions, eps=config.layer_norm_epsilon, activation=act,
        scale_attention=bool(getattr(config, "scale_attn_weights", True)),
        **decoder_only_fields(config, gen, config.vocab_size))


def weights(spec: GPT2Spec, state: dict) -> dict:
    spec.lm_head = canonical_name(state, "lm_head.weight")
    src = stored_weights(state)
    w = {}
    d = spec.d_model
    for name, a in src.items():
        if not name.startswith("transformer.h."):
            w[name] = a
            continue
        prefix, _, rest = name.partition(".attn.") if ".attn." in name else name.partition(".mlp.")
        kind = "attn" if ".attn." in name else "mlp"
        if kind == "attn" and rest.startswith("c_attn."):
            what = rest.split(".")[1]  # weight [d, 3d] or bias [3d]
            for i, role in enumerate(("q_proj", "k_proj", "v_proj")):
                part = a[:, i * d:(i + 1) * d].T if what == "weight" else a[i * d:(i + 1) * d]
                w[f"{prefix}.attn.{role}.{what}"] = np.ascontiguousarray(part)
        elif rest in ("c_proj.weight", "c_proj.bias", "c_fc.weight", "c_fc.bias"):
            layer, what = rest.split(".")
            role = {("attn", "c_proj"): "o_proj", ("mlp", "c_fc"): "fc_in", ("mlp", "c_proj"): "fc_out"}[(kind, layer)]
            w[f"{prefix}.{kind}.{role}.{what}"] = np.ascontiguousarray(a.T if what == "weight" else a)
        elif name.endswith((".weight", ".bias")) and (".ln_1." in name or ".ln_2." in name):
            w[name] = a
    return w


ARCH = Architecture("GPT2LMHeadModel", spec_from_config, weights, gpt2.build,
                    linear_weights=linear_weights_ending("_proj.weight", "fc_in.weight", "fc_out.weight"))
