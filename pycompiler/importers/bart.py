"""BART, MBart and Pegasus: config -> BartSpec (models/bart.py), which differ in
where the LayerNorms sit and how positions are embedded."""
from __future__ import annotations

from functools import partial

from ..models import bart
from ..models.bart import BartSpec
from .common import Architecture, UnsupportedConfig, canonical_name, stored_weights
from .m2m100 import spec_fields

# model_type -> (pre_norm, layernorm_embedding, position_offset)
_LAYOUT = {"bart": (False, True, 2), "mbart": (True, True, 2), "pegasus": (True, False, 0)}


def spec_from_config(model_type: str, config, gen) -> BartSpec:
    """The computation a BART-family config and generation config describe, or UnsupportedConfig."""
    pre_norm, layernorm_embedding, offset = _LAYOUT[model_type]
    return BartSpec(**spec_fields(config, gen), pre_norm=pre_norm, layernorm_embedding=layernorm_embedding,
                    position_offset=offset)


def weights(spec: BartSpec, state: dict) -> dict:
    """The stored weights under the names models/bart.py reads (tied names resolved);
    the position tables as the loaded model holds them (Pegasus makes its sinusoidal
    ones at load time)."""
    spec.encoder_embed = canonical_name(state, "model.encoder.embed_tokens.weight")
    spec.decoder_embed = canonical_name(state, "model.decoder.embed_tokens.weight")
    spec.lm_head = canonical_name(state, "lm_head.weight")
    w = stored_weights(state)
    w["final_logits_bias"] = w["final_logits_bias"].reshape(-1)
    if w["final_logits_bias"].shape[0] != spec.vocab_size:
        raise UnsupportedConfig("import_hf: final_logits_bias does not match the vocabulary")
    for side in ("encoder", "decoder"):
        rows = w[f"model.{side}.embed_positions.weight"].shape[0]
        if rows != spec.max_position_embeddings + spec.position_offset:
            raise UnsupportedConfig(f"import_hf: model.{side}.embed_positions.weight has {rows} rows")
    return w


def _arch(model_type: str, model_class: str, tokenizer) -> Architecture:
    return Architecture(model_class, partial(spec_from_config, model_type), weights, bart.build, tokenizer=tokenizer)


BART = _arch("bart", "BartForConditionalGeneration", "tokenizer.json")
MBART = _arch("mbart", "MBartForConditionalGeneration", None)  # its tokenizer is not read yet (docs/text.md)
PEGASUS = _arch("pegasus", "PegasusForConditionalGeneration", None)
