"""Whisper (WhisperForConditionalGeneration): config -> WhisperSpec, checkpoint
weights -> the names models/whisper.py reads."""
from __future__ import annotations

from ..generation import whisper_tasks
from ..generation.processors import import_fields
from ..generation.whisper_tasks import HOP, LANGUAGE_IDS, MEL_FILTERS, N_FFT, SAMPLING_RATE
from ..models import whisper
from ..models.whisper import WhisperSpec
from .common import (Architecture, UnsupportedConfig, canonical_name, check_heads, checked_activation,
                     eos_ids, generation_options, start_and_pad, stored_weights)


def spec_from_config(config, gen) -> WhisperSpec:
    """The computation a Whisper config and generation config describe, or UnsupportedConfig."""
    act = checked_activation(config.activation_function)
    check_heads(config, config.d_model)
    # Not read, as WhisperForConditionalGeneration does not read them: scale_embedding
    # (transformers computes embed_scale and never applies it), use_weighted_layer_sum
    # (audio classification), SpecAugment and dropout (training).
    eos = eos_ids(config, gen, config.vocab_size)
    opts = generation_options(config, gen, vocab_size=config.vocab_size, eos=eos,
                              default_max_length=min(20 + 1, config.max_target_positions))
    decoder_start, pad = start_and_pad(config, gen, eos)
    prev_sot = getattr(gen, "prev_sot_token_id", None)
    if prev_sot is not None and not (isinstance(prev_sot, int) and 0 <= prev_sot < config.vocab_size):
        raise UnsupportedConfig(f"import_hf: generation_config.prev_sot_token_id {prev_sot!r} is not a token id")
    return WhisperSpec(language_ids=_language_ids(gen, config.vocab_size), prev_sot_token_id=prev_sot,
        d_model=config.d_model, encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads, decoder_heads=config.decoder_attention_heads,
        vocab_size=config.vocab_size, num_mel_bins=config.num_mel_bins,
        max_source_positions=config.max_source_positions, max_target_positions=config.max_target_positions,
        activation=act, pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=decoder_start,
        generation=opts)


def _language_ids(gen, vocab_size: int) -> tuple:
    """generation_config's lang_to_id ids, ascending (what detect_language chooses among), or ()."""
    lang_to_id = getattr(gen, "lang_to_id", None)
    if not isinstance(lang_to_id, dict) or not lang_to_id:
        return ()
    ids = sorted(set(lang_to_id.values()))
    if not all(isinstance(i, int) and 0 <= i < vocab_size for i in ids):
        raise UnsupportedConfig(f"import_hf: generation_config's lang_to_id has ids outside the vocabulary "
                                f"[0, {vocab_size})")
    return tuple(ids)


def weights(spec: WhisperSpec, state: dict) -> dict:
    """The stored weights under the names models/whisper.py reads (the tied proj_out resolved)."""
    spec.lm_head = canonical_name(state, spec.lm_head)
    w = stored_weights(state)
    pos = w["model.encoder.embed_positions.weight"]
    if pos.shape != (spec.max_source_positions, spec.d_model):
        raise UnsupportedConfig(f"import_hf: model.encoder.embed_positions.weight is {list(pos.shape)}, "
                                f"not [{spec.max_source_positions}, {spec.d_model}]")
    w[MEL_FILTERS] = mel_filters(spec.num_mel_bins)
    if spec.language_ids:
        import numpy as np

        w[LANGUAGE_IDS] = np.array(spec.language_ids, dtype=np.int64)
    return w


def mel_filters(n_mels: int):
    """The mel filterbank of transformers' WhisperFeatureExtractor with Whisper's framing
    (16 kHz, n_fft 400), [n_fft / 2 + 1, n_mels] f32: the log_mel op's `filters`."""
    import numpy as np
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=n_mels, sampling_rate=SAMPLING_RATE, n_fft=N_FFT, hop_length=HOP)
    return np.ascontiguousarray(fe.mel_filters, dtype=np.float32)


def meta(spec: WhisperSpec) -> dict:
    return {
        "pad_token_id": spec.pad_token_id, "eos_token_id": spec.eos_token_id,
        "decoder_start_token_id": spec.decoder_start_token_id, "vocab_size": spec.vocab_size,
        "num_mel_bins": spec.num_mel_bins, "max_source_positions": spec.max_source_positions,
        # the decoder's: generate's length checks read it
        "max_position_embeddings": spec.max_target_positions,
        # the timestamp rule's constants (fixed at import; generation/timestamps.py)
        **{f: spec.generation[f] for f in import_fields() if spec.generation.get(f) is not None},
        # long-form transcription's <|startofprev|> (cli/whisper_longform.cpp)
        **({"prev_sot_token_id": spec.prev_sot_token_id} if spec.prev_sot_token_id is not None else {}),
    }


# linear_weights: the default's (the convolutions stay f32)
def build(spec: WhisperSpec, weights, meta=None):
    """The network (models/whisper.py), then the tasks around it (generation/whisper_tasks.py)."""
    return whisper_tasks.build_whisper_tasks(whisper.build(spec, weights, meta), spec)


ARCH = Architecture("WhisperForConditionalGeneration", spec_from_config, weights, build, meta=meta,
                    tokenizer="whisper-bpe")
