"""Marian (MarianMTModel): config -> MarianSpec, checkpoint weights -> the names
models/marian.py reads."""
from __future__ import annotations

import numpy as np

from ..models import marian
from ..models.marian import MarianSpec
from .common import (Architecture, UnsupportedConfig, canonical_name, check_heads, checked_activation,
                     eos_ids, generation_options, start_and_pad, stored_weights)


def spec_from_config(config, gen) -> MarianSpec:
    """The computation a Marian config and generation config describe, or UnsupportedConfig."""
    act = checked_activation(getattr(config, "activation_function", "swish"))
    check_heads(config, config.d_model)
    shared = getattr(config, "share_encoder_decoder_embeddings", True)
    dec_vocab = config.vocab_size if shared else (getattr(config, "decoder_vocab_size", None) or config.vocab_size)
    eos = eos_ids(config, gen, dec_vocab)
    # transformers' default for an encoder-decoder: 20 tokens after the decoder start
    opts = generation_options(config, gen, vocab_size=dec_vocab, eos=eos,
                              default_max_length=min(20 + 1, config.max_position_embeddings))
    decoder_start, pad = start_and_pad(config, gen)
    return MarianSpec(
        d_model=config.d_model,
        encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads, decoder_heads=config.decoder_attention_heads,
        encoder_ffn_dim=config.encoder_ffn_dim, decoder_ffn_dim=config.decoder_ffn_dim,
        vocab_size=config.vocab_size, decoder_vocab_size=dec_vocab,
        activation=act, scale_embedding=bool(config.scale_embedding),
        pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=decoder_start,
        max_position_embeddings=config.max_position_embeddings, generation=opts,
    )


def weights(spec: MarianSpec, state: dict) -> dict:
    """The stored weights under the names models/marian.py reads (spec's tied names resolved)."""
    for role in ("encoder_embed", "decoder_embed", "lm_head"):
        setattr(spec, role, canonical_name(state, getattr(spec, role)))
    w = stored_weights(state)
    w["final_logits_bias"] = w["final_logits_bias"].reshape(-1)
    if w["final_logits_bias"].shape[0] != spec.decoder_vocab_size:
        raise UnsupportedConfig("import_hf: final_logits_bias does not match the decoder vocabulary")
    for side in ("encoder", "decoder"):
        if not np.any(w[f"model.{side}.embed_positions.weight"]):
            raise UnsupportedConfig(f"import_hf: model.{side}.embed_positions.weight is all zeros")
    return w


ARCH = Architecture("MarianMTModel", spec_from_config, weights, marian.build, tokenizer="marian-spm")
