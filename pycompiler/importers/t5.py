"""T5 (T5ForConditionalGeneration, v1.0 and v1.1 / flan-t5) and mT5: config -> T5Spec; the
relative position bias of every distance, bucketed by transformers' own
T5Attention._relative_position_bucket from the checkpoint's bias embeddings."""
from __future__ import annotations

import numpy as np

from ..models import t5
from ..models.t5 import DECODER_BIAS, ENCODER_BIAS, T5Spec
from .common import (Architecture, UnsupportedConfig, canonical_name, checked_activation, eos_ids, generation_options,
                     linear_weights_ending, start_and_pad, stored_weights)

LINEAR_SUFFIXES = tuple(f".{n}.weight" for n in ("q", "k", "v", "o", "wi", "wi_0", "wi_1", "wo"))


def spec_from_config(config, gen) -> T5Spec:
    # transformers 5 keeps whether logits are scaled in scale_decoder_outputs; older
    # versions scale exactly when the embeddings are tied
    scale = getattr(config, "scale_decoder_outputs", None)
    return _spec(config, gen, bool(config.tie_word_embeddings) if scale is None else bool(scale))


def mt5_spec_from_config(config, gen) -> T5Spec:
    """mT5 is T5 v1.1 (MT5ForConditionalGeneration never scales the logits; its
    checkpoints say tie_word_embeddings false, which transformers 5 overrides)."""
    return _spec(config, gen, False)


def _spec(config, gen, scale: bool) -> T5Spec:
    act = checked_activation(config.dense_act_fn, "dense_act_fn")
    eos = eos_ids(config, gen, config.vocab_size)
    opts = generation_options(config, gen, vocab_size=config.vocab_size, eos=eos, default_max_length=20 + 1)
    decoder_start, pad = start_and_pad(config, gen, eos)
    return T5Spec(
        d_model=config.d_model, d_kv=config.d_kv, num_heads=config.num_heads, encoder_layers=config.num_layers,
        decoder_layers=config.num_decoder_layers, vocab_size=config.vocab_size, activation=act,
        gated=bool(config.is_gated_act), eps=float(config.layer_norm_epsilon), scale_decoder_outputs=scale,
        max_distance=int(config.relative_attention_max_distance), pad_token_id=pad, eos_token_id=eos,
        decoder_start_token_id=decoder_start, generation=opts)


def _bias_table(attention, distances, bidirectional: bool) -> np.ndarray:
    """[len(distances), heads]: the bias of each key - query distance, bucketed as the
    model buckets it. Every distance past max_distance must share the bucket of
    +-max_distance, or clamping to it would change the result."""
    import torch

    cfg = attention.config
    nb, md = cfg.relative_attention_num_buckets, cfg.relative_attention_max_distance

    def buckets(rel):
        return attention._relative_position_bucket(torch.as_tensor(rel, dtype=torch.long), bidirectional=bidirectional,
                                                   num_buckets=nb, max_distance=md)

    far = np.arange(md, 4 * md + 1024)
    for side in (far, -far) if bidirectional else (-far,):
        b = buckets(side)
        if not bool((b == b[0]).all()) or not 0 <= int(b[0]) < nb:
            raise UnsupportedConfig(f"import_hf: relative_attention_max_distance {md} with {nb} buckets does not put "
                                    "every longer distance in one bucket")
    with torch.no_grad():
        return attention.relative_attention_bias(buckets(distances)).float().numpy().copy()


def from_model(spec: T5Spec, model) -> dict:
    md = spec.max_distance
    enc = model.encoder.block[0].layer[0].SelfAttention
    dec = model.decoder.block[0].layer[0].SelfAttention
    return {ENCODER_BIAS: _bias_table(enc, np.arange(-md, md + 1), True),
            DECODER_BIAS: _bias_table(dec, -np.arange(0, md + 1), False)}


def weights(spec: T5Spec, state: dict) -> dict:
    for role in ("encoder_embed", "decoder_embed", "lm_head"):
        setattr(spec, role, canonical_name(state, getattr(spec, role)))
    return stored_weights(state)


# the meta.json entries are the default's (importers/common.py: spec_meta): no max_position_embeddings
ARCH = Architecture("T5ForConditionalGeneration", spec_from_config, weights, t5.build,
                    linear_weights=linear_weights_ending(*LINEAR_SUFFIXES), from_model=from_model, tokenizer="t5-spm")
MT5 = Architecture("MT5ForConditionalGeneration", mt5_spec_from_config, weights, t5.build,
                   linear_weights=linear_weights_ending(*LINEAR_SUFFIXES), from_model=from_model, tokenizer="t5-spm")
