"""M2M100 / NLLB (M2M100ForConditionalGeneration): config -> M2M100Spec; the
sinusoidal position table, which transformers does not save, made by transformers'
own M2M100SinusoidalPositionalEmbedding.get_embedding."""
from __future__ import annotations

from ..models import m2m100
from ..models.layers import ACTIVATIONS
from ..models.m2m100 import POSITIONS, M2M100Spec
from .common import Architecture, UnsupportedConfig, canonical_name, eos_ids, generation_options, stored_weights

LINEAR_SUFFIXES = ("_proj.weight", "fc1.weight", "fc2.weight")


def spec_from_config(config, gen) -> M2M100Spec:
    act = config.activation_function
    if act not in ACTIVATIONS:
        raise UnsupportedConfig(f"import_hf: activation_function '{act}' is not supported ({sorted(ACTIVATIONS)})")
    for heads_attr in ("encoder_attention_heads", "decoder_attention_heads"):
        if config.d_model % getattr(config, heads_attr):
            raise UnsupportedConfig(f"import_hf: d_model {config.d_model} is not divisible by {heads_attr}")
    eos = eos_ids(config, gen, config.vocab_size)
    opts = generation_options(config, gen, vocab_size=config.vocab_size, eos=eos,
                              default_max_length=min(20 + 1, config.max_position_embeddings))
    start = gen.decoder_start_token_id if gen.decoder_start_token_id is not None else config.decoder_start_token_id
    pad = gen.pad_token_id if gen.pad_token_id is not None else config.pad_token_id
    return M2M100Spec(
        d_model=config.d_model, encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads, decoder_heads=config.decoder_attention_heads,
        vocab_size=config.vocab_size, activation=act, scale_embedding=bool(config.scale_embedding),
        pad_token_id=int(pad), eos_token_id=eos, decoder_start_token_id=int(start),
        max_position_embeddings=config.max_position_embeddings, generation=opts)


def from_model(spec: M2M100Spec, model) -> None:
    """The position table as transformers makes it, long enough for every position a
    source or max_length allows (ids run up to padding_idx + length)."""
    table = model.model.encoder.embed_positions
    rows = spec.pad_token_id + spec.max_position_embeddings + 2
    spec.positions = table.get_embedding(rows, spec.d_model, spec.pad_token_id).float().numpy().copy()


def weights(spec: M2M100Spec, state: dict) -> dict:
    spec.embed = canonical_name(state, "model.encoder.embed_tokens.weight")
    if canonical_name(state, "model.decoder.embed_tokens.weight") != spec.embed:
        raise UnsupportedConfig("import_hf: separate encoder and decoder embeddings are not supported")
    spec.lm_head = canonical_name(state, "lm_head.weight")
    w = stored_weights(state)
    w[POSITIONS] = spec.positions
    return w


def linear_weights(spec: M2M100Spec, w: dict) -> list:
    return [n for n in w if n.endswith(LINEAR_SUFFIXES) and w[n].ndim == 2] + [spec.lm_head]


def meta(spec: M2M100Spec) -> dict:
    return {"pad_token_id": spec.pad_token_id, "eos_token_id": spec.eos_token_id,
            "decoder_start_token_id": spec.decoder_start_token_id, "vocab_size": spec.vocab_size,
            "decoder_vocab_size": spec.vocab_size, "max_position_embeddings": spec.max_position_embeddings}


ARCH = Architecture("M2M100ForConditionalGeneration", spec_from_config, weights, linear_weights, meta, m2m100.build,
                    from_model)
