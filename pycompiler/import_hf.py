"""Import a Hugging Face MarianMTModel checkpoint directory into a tensorvm program.

    tensorvm.import_hf("opus-mt-en-fr/", "opus-mt-en-fr.tvm")
    tensorvm import-hf opus-mt-en-fr/ -o opus-mt-en-fr.tvm

The checkpoint is read with transformers' own `from_pretrained`, so whatever it
loads (safetensors or bin, tied or untied heads) we import. Everything in the config
that changes the computation is honoured or refused here, never silently ignored.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .generation.processors import import_fields, token_list_defaults
from .generation.search import generate_inputs, generation_config_defaults
from .models import marian
from .models.marian import ACTIVATIONS, MarianSpec, UnsupportedConfig
from .quantize import QUANTIZATIONS
from .tokenizer_files import attach_tokenizer

# generation_config fields that change results, with the value that means "off".
# A checkpoint asking for one that `generate` does not implement is refused; a field
# the generation library registers (an input or an import-time field of a
# processor, pycompiler/generation/processors.py) is read instead, so registering a
# processor is enough to accept it.
_GENERATION_OFF = {
    "encoder_no_repeat_ngram_size": 0, "encoder_repetition_penalty": 1.0,
    "exponential_decay_length_penalty": None, "sequence_bias": None, "guidance_scale": None,
    "diversity_penalty": 0.0, "num_beam_groups": 1, "constraints": None, "force_words_ids": None,
    "eta_cutoff": 0.0, "top_h": None,
    "penalty_alpha": None, "watermarking_config": None, "remove_invalid_values": False, "low_memory": False,
    "stop_strings": None, "max_time": None,
}


def _unsupported_fields() -> dict:
    known = {i.name for i in generate_inputs()} | set(import_fields())
    return {k: v for k, v in _GENERATION_OFF.items() if k not in known}


def _load(checkpoint_dir):
    try:
        import torch
        from transformers import AutoConfig, GenerationConfig, MarianMTModel
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("import_hf needs torch and transformers: pip install 'tensorvm[import]'") from e
    path = Path(checkpoint_dir)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"import_hf: {path} is not a transformers checkpoint directory (no config.json)")
    config = AutoConfig.from_pretrained(path)
    if config.model_type != "marian":
        raise UnsupportedConfig(f"import_hf: model_type '{config.model_type}' is not supported (only 'marian')")
    model = MarianMTModel.from_pretrained(path, attn_implementation="eager")
    model.eval()
    try:
        gen = GenerationConfig.from_pretrained(path)
    except OSError:
        gen = GenerationConfig.from_model_config(config)
    with torch.no_grad():
        state = {}
        owner = {}  # data pointer -> first name seen, so tied weights are stored once
        for name, t in model.state_dict(keep_vars=False).items():
            ptr = (t.data_ptr(), tuple(t.shape))
            owner.setdefault(ptr, name)
            state[name] = (owner[ptr], t.detach().to(torch.float32).contiguous().numpy().copy())
    return config, gen, state


def spec_from_config(config, gen) -> MarianSpec:
    """The computation a Marian config and generation config describe, or UnsupportedConfig."""
    act = getattr(config, "activation_function", "swish")
    if act not in ACTIVATIONS:
        raise UnsupportedConfig(f"import_hf: activation_function '{act}' is not supported ({sorted(ACTIVATIONS)})")
    for heads_attr in ("encoder_attention_heads", "decoder_attention_heads"):
        if config.d_model % getattr(config, heads_attr):
            raise UnsupportedConfig(f"import_hf: d_model {config.d_model} is not divisible by {heads_attr}")
    shared = getattr(config, "share_encoder_decoder_embeddings", True)
    dec_vocab = config.vocab_size if shared else (getattr(config, "decoder_vocab_size", None) or config.vocab_size)
    eos = gen.eos_token_id if gen.eos_token_id is not None else config.eos_token_id
    if isinstance(eos, (list, tuple)):
        if len(eos) != 1:
            raise UnsupportedConfig(f"import_hf: several eos_token_ids {eos} are not supported")
        eos = eos[0]
    bad = []
    for ids in getattr(gen, "bad_words_ids", None) or []:
        if list(ids) == [eos]:  # transformers drops a bad word equal to the EOS token
            continue
        if len(ids) != 1:
            raise UnsupportedConfig(f"import_hf: bad_words_ids entry {ids} has several tokens; only single-token "
                                    "bans are supported")
        bad.append(int(ids[0]))
    for field, off in _unsupported_fields().items():
        value = getattr(gen, field, off)
        if value not in (off, None) and value != off:
            raise UnsupportedConfig(f"import_hf: generation_config.{field} = {value!r} is not supported yet")
    forced_eos = getattr(gen, "forced_eos_token_id", None)
    if isinstance(forced_eos, (list, tuple)):
        if len(forced_eos) != 1:
            raise UnsupportedConfig(f"import_hf: several forced_eos_token_ids {forced_eos} are not supported")
        forced_eos = forced_eos[0]
    # every generate input that is a generation_config field, from the generation
    # library's registry (transformers' global default where the checkpoint has none),
    # checked and converted as generate checks a keyword
    opts = {}
    inputs = {i.name: i for i in generate_inputs()}
    given = {"forced_eos_token_id": forced_eos}
    for field, default in generation_config_defaults().items():
        value = given[field] if field in given else getattr(gen, field, None)
        try:
            value = default if value is None else inputs[field].check(value, {"decoder_vocab_size": dec_vocab})
        except ValueError as e:
            raise UnsupportedConfig(f"import_hf: generation_config.{field} = {value!r}: {e}") from None
        opts[field] = value.tolist() if hasattr(value, "tolist") else value
    if getattr(gen, "min_new_tokens", None) is not None:
        opts["min_length"] = int(gen.min_new_tokens) + 1  # the decoder start token counts
    if gen.max_length is not None:
        max_length = int(gen.max_length)
    else:  # transformers' default: 20 new tokens, within the position table
        max_length = min(20 + 1, config.max_position_embeddings)
    decoder_start = gen.decoder_start_token_id if gen.decoder_start_token_id is not None else config.decoder_start_token_id
    pad = gen.pad_token_id if gen.pad_token_id is not None else config.pad_token_id
    opts.update(max_length=max_length, bad_words_ids=[[t] for t in bad])
    return MarianSpec(
        d_model=config.d_model,
        encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads, decoder_heads=config.decoder_attention_heads,
        encoder_ffn_dim=config.encoder_ffn_dim, decoder_ffn_dim=config.decoder_ffn_dim,
        vocab_size=config.vocab_size, decoder_vocab_size=dec_vocab,
        activation=act, scale_embedding=bool(config.scale_embedding),
        pad_token_id=int(pad), eos_token_id=int(eos), decoder_start_token_id=int(decoder_start),
        max_position_embeddings=config.max_position_embeddings, generation=opts,
    )


_LINEAR_SUFFIXES = ("_proj.weight", "fc1.weight", "fc2.weight")


def _quantize_linears(weights: dict, spec: MarianSpec, mode: str) -> None:
    """The build step of linear_int8 / linear_w8a8: every linear weight (and the output
    projection) becomes int8 rows plus one f32 scale per row (w8a8: packed for VNNI);
    the exporter keeps only what the traced program uses, so the f32 originals of
    quantized layers are not written."""
    from .quantize import pack_w8a8, quantize_int8

    spec.quantize = mode
    names = [n for n in weights if n.endswith(_LINEAR_SUFFIXES) and weights[n].ndim == 2] + [spec.lm_head]
    for name in dict.fromkeys(names):
        q, scale = quantize_int8(weights[name])
        weights[f"{name}.{mode}"] = q if mode == "int8" else pack_w8a8(q)
        weights[f"{name}.scale"] = scale


def import_hf(checkpoint_dir, out_path, quantize: str | None = None) -> Path:
    """Reads a MarianMTModel checkpoint directory and writes a program directory."""
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise UnsupportedConfig(
            f"import_hf: quantize={quantize!r} is not supported (None, {', '.join(repr(q) for q in QUANTIZATIONS)})")
    config, gen, state = _load(checkpoint_dir)
    spec = spec_from_config(config, gen)
    names = {n: canonical for n, (canonical, _) in state.items()}
    for role in ("encoder_embed", "decoder_embed", "lm_head"):
        name = getattr(spec, role)
        if name not in names:
            raise UnsupportedConfig(f"import_hf: the checkpoint has no weight '{name}'")
        setattr(spec, role, names[name])
    weights = {}
    for name, (canonical, array) in state.items():
        if canonical == name:
            weights[name] = array
    weights["final_logits_bias"] = weights["final_logits_bias"].reshape(-1)
    weights.update(token_list_defaults(spec.generation))
    if weights["final_logits_bias"].shape[0] != spec.decoder_vocab_size:
        raise UnsupportedConfig("import_hf: final_logits_bias does not match the decoder vocabulary")
    if quantize is not None:
        _quantize_linears(weights, spec, quantize)
    for side in ("encoder", "decoder"):
        pos = weights[f"model.{side}.embed_positions.weight"]
        if not np.any(pos):
            raise UnsupportedConfig(f"import_hf: model.{side}.embed_positions.weight is all zeros")
    meta = {
        "model_type": "marian",
        "source": str(Path(checkpoint_dir).resolve()),
        "pad_token_id": spec.pad_token_id, "eos_token_id": spec.eos_token_id,
        "decoder_start_token_id": spec.decoder_start_token_id,
        "max_length": spec.generation["max_length"], "num_beams": spec.generation["num_beams"],
        "generation": {k: v for k, v in spec.generation.items() if k not in import_fields()},
        "vocab_size": spec.vocab_size, "decoder_vocab_size": spec.decoder_vocab_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "bad_words_ids": spec.generation["bad_words_ids"], "forced_eos_token_id": spec.generation["forced_eos_token_id"],
        "renormalize_logits": spec.generation["renormalize_logits"],
        "tied_weights": {n: c for n, c in names.items() if n != c},
        "quantize": quantize,
    }
    pb = marian.build(spec, weights, meta)
    attach_tokenizer(pb, checkpoint_dir, "marian")
    pb.save(out_path)
    return Path(out_path)
