"""Gemma 3's text model (Gemma3ForCausalLM, model_type gemma3_text): config -> Gemma3Spec.
Each layer type's rotary frequencies are read from the loaded model's rotary_emb
(its <type>_inv_freq buffer, rope scaling applied, and <type>_attention_scaling)."""
from __future__ import annotations

import numpy as np

from ..models import gemma3
from ..models.gemma3 import Gemma3Spec
from .common import Architecture, UnsupportedConfig
from .llama import _sliding_window, _spec, meta, weights

LAYER_TYPES = ("full_attention", "sliding_attention")


def _gemma3_spec(config, gen) -> Gemma3Spec:
    if getattr(config, "use_bidirectional_attention", False):
        raise UnsupportedConfig("import_hf: use_bidirectional_attention is not supported (a decoder-only model)")
    types = list(config.layer_types)[:config.num_hidden_layers]
    if len(types) < config.num_hidden_layers or set(types) - set(LAYER_TYPES):
        raise UnsupportedConfig(f"import_hf: layer_types {types} are not {config.num_hidden_layers} of "
                                f"{', '.join(LAYER_TYPES)}")
    window = _sliding_window(config)
    sliding = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    if sliding and window is None:
        raise UnsupportedConfig("import_hf: sliding_attention layers without a sliding_window")
    bias = bool(getattr(config, "attention_bias", False))
    return _spec(config, gen, qkv_bias=bias, o_bias=bias, act=config.hidden_activation, spec_class=Gemma3Spec,
                 norm_plus_one=True, embed_scale=float(np.float32(config.hidden_size ** 0.5)), qk_norm=True,
                 sliding_window=window, sliding_layers=sliding, query_scale=config.query_pre_attn_scalar ** -0.5,
                 final_softcap=config.final_logit_softcapping)  # attn_logit_softcapping: see models/gemma3.py


def from_model(spec: Gemma3Spec, model) -> dict:
    """The weights rotary.inv_freq (global layers) and rotary.local_inv_freq (sliding
    layers), each where a layer of its type is, and their scalings on the spec."""
    rotary = model.model.rotary_emb
    out = {}
    for kind, weight, scale in (("full_attention", "rotary.inv_freq", "rope_scale"),
                                ("sliding_attention", "rotary.local_inv_freq", "local_rope_scale")):
        buffer = getattr(rotary, f"{kind}_inv_freq", None)
        if buffer is None:  # no layer of this type
            continue
        out[weight] = buffer.detach().float().numpy().copy()
        setattr(spec, scale, float(getattr(rotary, f"{kind}_attention_scaling")))
        if out[weight].shape != (spec.head_dim // 2,):
            raise UnsupportedConfig(f"import_hf: rotary {kind}_inv_freq has shape {out[weight].shape}, "
                                    f"expected [{spec.head_dim // 2}]")
    return out


GEMMA3 = Architecture("Gemma3ForCausalLM", _gemma3_spec, weights, gemma3.build, meta=meta, from_model=from_model)
