"""OPT (OPTForCausalLM): config -> OPTSpec; the weights as transformers names them."""
from __future__ import annotations

from ..models import opt
from ..models.opt import POSITION_OFFSET, OPTSpec
from .common import (LINEAR_SUFFIXES, Architecture, UnsupportedConfig, canonical_name, checked_activation,
                     decoder_only_fields, linear_weights_ending, stored_weights)


def spec_from_config(config, gen) -> OPTSpec:
    d, heads = config.hidden_size, config.num_attention_heads
    if d % heads:
        raise UnsupportedConfig(f"import_hf: hidden_size {d} is not divisible by num_attention_heads {heads}")
    pre = bool(config.do_layer_norm_before)
    return OPTSpec(
        d_model=d, embed_dim=config.word_embed_proj_dim or d, layers=config.num_hidden_layers, heads=heads,
        vocab_size=config.vocab_size, max_position_embeddings=config.max_position_embeddings,
        activation=checked_activation(config.activation_function), pre_norm=pre,
        final_norm=pre and not getattr(config, "_remove_final_layer_norm", False),
        norm_affine=bool(getattr(config, "layer_norm_elementwise_affine", True)),
        bias=bool(getattr(config, "enable_bias", True)), **decoder_only_fields(config, gen, config.vocab_size))


def weights(spec: OPTSpec, state: dict) -> dict:
    spec.lm_head = canonical_name(state, "lm_head.weight")
    w = stored_weights(state)
    rows = w["model.decoder.embed_positions.weight"].shape[0]
    if rows != spec.max_position_embeddings + POSITION_OFFSET:
        raise UnsupportedConfig(f"import_hf: model.decoder.embed_positions.weight has {rows} rows, expected "
                                f"max_position_embeddings + {POSITION_OFFSET}")
    return w


ARCH = Architecture("OPTForCausalLM", spec_from_config, weights, opt.build,
                    linear_weights=linear_weights_ending(*LINEAR_SUFFIXES, "project_in.weight", "project_out.weight"))
