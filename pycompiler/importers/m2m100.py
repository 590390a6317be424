"""M2M100 / NLLB (M2M100ForConditionalGeneration): config -> M2M100Spec; the
sinusoidal position table, which transformers does not save, made by transformers'
own M2M100SinusoidalPositionalEmbedding.get_embedding."""
from __future__ import annotations

from ..models import m2m100
from ..models.m2m100 import POSITIONS, M2M100Spec
from .bart import spec_fields  # the BART family's, with one vocabulary
from .common import Architecture, UnsupportedConfig, canonical_name, stored_weights


def spec_from_config(config, gen) -> M2M100Spec:
    return M2M100Spec(**spec_fields(config, gen))


def from_model(spec: M2M100Spec, model) -> dict:
    """The position table as transformers makes it, long enough for every position a
    source or max_length allows (ids run up to padding_idx + length)."""
    table = model.model.encoder.embed_positions
    rows = spec.pad_token_id + spec.max_position_embeddings + 2
    return {POSITIONS: table.get_embedding(rows, spec.d_model, spec.pad_token_id).float().numpy().copy()}


def weights(spec: M2M100Spec, state: dict) -> dict:
    spec.embed = canonical_name(state, "model.encoder.embed_tokens.weight")
    if canonical_name(state, "model.decoder.embed_tokens.weight") != spec.embed:
        raise UnsupportedConfig("import_hf: separate encoder and decoder embeddings are not supported")
    spec.lm_head = canonical_name(state, "lm_head.weight")
    return stored_weights(state)


ARCH = Architecture("M2M100ForConditionalGeneration", spec_from_config, weights, m2m100.build, from_model=from_model,
                    tokenizer="m2m100-spm")  # or nllb-spm: tokenizer_files tells them apart
