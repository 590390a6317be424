"""BART, MBart, Pegasus and Marian: config -> BartSpec (models/bart.py), which differ in
where the LayerNorms sit and how positions are embedded; Marian may also have a
decoder vocabulary of its own."""
from __future__ import annotations

from functools import partial

import numpy as np

from ..models import bart
from ..models.bart import BartSpec
from .common import (Architecture, UnsupportedConfig, canonical_name, check_heads, checked_activation, eos_ids,
                     generation_options, start_and_pad, stored_weights)

# model_type -> (pre_norm, layernorm_embedding, position_offset)
_LAYOUT = {"bart": (False, True, 2), "mbart": (True, True, 2), "pegasus": (True, False, 0), "marian": (False, False, 0)}


def spec_fields(config, gen, decoder_vocab_size: int | None = None) -> dict:
    """The spec fields the BART family shares with M2M100 (importers/m2m100.py), or
    UnsupportedConfig; the end tokens and generate's defaults are checked against the
    decoder's vocabulary (vocab_size unless `decoder_vocab_size`)."""
    vocab = config.vocab_size if decoder_vocab_size is None else decoder_vocab_size
    act = checked_activation(config.activation_function)
    check_heads(config, config.d_model)
    eos = eos_ids(config, gen, vocab)
    # transformers' default for an encoder-decoder: 20 tokens after the decoder start
    opts = generation_options(config, gen, vocab_size=vocab, eos=eos,
                              default_max_length=min(20 + 1, config.max_position_embeddings))
    decoder_start, pad = start_and_pad(config, gen, eos)
    return dict(
        d_model=config.d_model, encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads, decoder_heads=config.decoder_attention_heads,
        vocab_size=config.vocab_size, activation=act, scale_embedding=bool(config.scale_embedding),
        pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=decoder_start,
        max_position_embeddings=config.max_position_embeddings, generation=opts)


def spec_from_config(model_type: str, config, gen) -> BartSpec:
    """The computation a BART-family config and generation config describe, or UnsupportedConfig."""
    pre_norm, layernorm_embedding, offset = _LAYOUT[model_type]
    decoder_vocab = None
    if model_type == "marian" and not getattr(config, "share_encoder_decoder_embeddings", True):
        decoder_vocab = getattr(config, "decoder_vocab_size", None) or config.vocab_size
    return BartSpec(**spec_fields(config, gen, decoder_vocab), pre_norm=pre_norm,
                    layernorm_embedding=layernorm_embedding, position_offset=offset, decoder_vocab_size=decoder_vocab)


def weights(spec: BartSpec, state: dict) -> dict:
    """The stored weights under the names models/bart.py reads (tied names resolved);
    the position tables as the loaded model holds them (Pegasus and Marian make their
    sinusoidal ones at load time)."""
    spec.encoder_embed = canonical_name(state, "model.encoder.embed_tokens.weight")
    spec.decoder_embed = canonical_name(state, "model.decoder.embed_tokens.weight")
    spec.lm_head = canonical_name(state, "lm_head.weight")
    w = stored_weights(state)
    w["final_logits_bias"] = w["final_logits_bias"].reshape(-1)
    if w["final_logits_bias"].shape[0] != spec.decoder_vocab_size:
        raise UnsupportedConfig("import_hf: final_logits_bias does not match the decoder vocabulary")
    for side in ("encoder", "decoder"):
        rows = w[f"model.{side}.embed_positions.weight"].shape[0]
        if rows != spec.max_position_embeddings + spec.position_offset:
            raise UnsupportedConfig(f"import_hf: model.{side}.embed_positions.weight has {rows} rows")
    return w


def marian_weights(spec: BartSpec, state: dict) -> dict:
    """weights, and Marian's sinusoidal tables checked to be there (not all zeros)."""
    w = weights(spec, state)
    for side in ("encoder", "decoder"):
        if not np.any(w[f"model.{side}.embed_positions.weight"]):
            raise UnsupportedConfig(f"import_hf: model.{side}.embed_positions.weight is all zeros")
    return w


def _arch(model_type: str, model_class: str, tokenizer, weights=weights) -> Architecture:
    return Architecture(model_class, partial(spec_from_config, model_type), weights, bart.build, tokenizer=tokenizer)


BART = _arch("bart", "BartForConditionalGeneration", "tokenizer.json")
MBART = _arch("mbart", "MBartForConditionalGeneration", None)  # its tokenizer is not read yet (docs/text.md)
PEGASUS = _arch("pegasus", "PegasusForConditionalGeneration", None)
MARIAN = _arch("marian", "MarianMTModel", "marian-spm", marian_weights)
