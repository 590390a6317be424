"""What every architecture's importer shares: reading a checkpoint with transformers'
own from_pretrained, storing tied weights once, the generation_config fields every
generate reads, and quantizing linear weights.

An architecture module (importers/<model_type>.py) turns a config into its spec,
its state dict into the weights its model file names, and lists its metadata;
importers/__init__.py maps model_type to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..generation.processors import import_fields
from ..generation.search import generate_inputs, generation_config_defaults


class UnsupportedConfig(ValueError):
    """The checkpoint asks for something this importer does not compute."""


@dataclass(frozen=True)
class Architecture:
    """How one model_type is imported (an entry of importers.ARCHITECTURES)."""
    model_class: str  # the transformers class that loads the checkpoint
    spec_from_config: Callable  # (config, generation_config) -> the model file's spec, or UnsupportedConfig
    weights: Callable  # (spec, state) -> {name: array} under the names the model file reads
    linear_weights: Callable  # (spec, weights) -> [name]: what quantize= turns into int8
    meta: Callable  # spec -> this architecture's meta.json entries
    build: Callable  # (spec, weights, meta) -> ProgramBuilder: the model file's builder
    from_model: Optional[Callable] = None  # (spec, loaded model): what the state dict lacks (buffers)


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


def _transformers():
    try:
        import torch
        import transformers
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("import_hf needs torch and transformers: pip install 'tensorvm[import]'") from e
    return torch, transformers


def load_config(checkpoint_dir):
    """(config, generation_config) of a checkpoint directory, read by transformers,
    so an unsupported config is refused before any weight is loaded."""
    _, transformers = _transformers()
    path = Path(checkpoint_dir)
    config = transformers.AutoConfig.from_pretrained(path)
    try:
        gen = transformers.GenerationConfig.from_pretrained(path)
    except OSError:
        gen = transformers.GenerationConfig.from_model_config(config)
    return config, gen


def load_weights(checkpoint_dir, model_class: str, config):
    """(state, model): the checkpoint loaded by transformers' `model_class` (eager
    attention, eval mode); state maps every weight name to (the name it is stored
    under, f32 array): tied weights share one stored name, the first seen."""
    torch, transformers = _transformers()
    model = getattr(transformers, model_class).from_pretrained(Path(checkpoint_dir), config=config,
                                                               attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        state = {}
        owner = {}  # data pointer -> first name seen, so tied weights are stored once
        for name, t in model.state_dict(keep_vars=False).items():
            ptr = (t.data_ptr(), tuple(t.shape))
            owner.setdefault(ptr, name)
            state[name] = (owner[ptr], t.detach().to(torch.float32).contiguous().numpy().copy())
    return state, model


def stored_weights(state: dict) -> dict:
    """{name: array} with each tied group stored once, under its first name."""
    return {name: array for name, (canonical, array) in state.items() if canonical == name}


def canonical_name(state: dict, name: str) -> str:
    """The stored name of weight `name` (itself unless tied to an earlier one)."""
    if name not in state:
        raise UnsupportedConfig(f"import_hf: the checkpoint has no weight '{name}'")
    return state[name][0]


def single_id(value, what: str):
    """An id given as an int or a one-element list (None stays None)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise UnsupportedConfig(f"import_hf: several {what}s {list(value)} are not supported")
        value = value[0]
    return None if value is None else int(value)


def checked_activation(name: str, field: str = "activation_function") -> str:
    """A transformers activation name the model files compute, or UnsupportedConfig."""
    from ..models.layers import ACTIVATIONS

    if name not in ACTIVATIONS:
        raise UnsupportedConfig(f"import_hf: {field} '{name}' is not supported ({sorted(ACTIVATIONS)})")
    return name


def check_heads(config, width: int, fields=("encoder_attention_heads", "decoder_attention_heads")) -> None:
    """Every attention's heads divide the model width."""
    for field in fields:
        if width % getattr(config, field):
            raise UnsupportedConfig(f"import_hf: d_model {width} is not divisible by {field}")


def start_and_pad(config, gen) -> tuple:
    """An encoder-decoder's decoder_start_token_id and pad_token_id (generation_config over config)."""
    start = gen.decoder_start_token_id if gen.decoder_start_token_id is not None else config.decoder_start_token_id
    pad = gen.pad_token_id if gen.pad_token_id is not None else config.pad_token_id
    return int(start), int(pad)


def eos_ids(config, gen, vocab_size: int):
    """The checkpoint's end tokens (generation_config over config): an int, or a tuple
    when it lists several (a row ends on any; Llama 3 ships several)."""
    eos = gen.eos_token_id if gen.eos_token_id is not None else config.eos_token_id
    if eos is None:
        raise UnsupportedConfig("import_hf: the checkpoint has no eos_token_id")
    eos = [int(e) for e in eos] if isinstance(eos, (list, tuple)) else [int(eos)]
    if not eos or min(eos) < 0 or max(eos) >= vocab_size:
        raise UnsupportedConfig(f"import_hf: eos_token_id {eos} is not a list of token ids below {vocab_size}")
    return eos[0] if len(eos) == 1 else tuple(eos)


def first(ids) -> int:
    """The first of one id or a tuple of them (transformers pads with eos_token_id[0])."""
    return int(ids[0]) if isinstance(ids, tuple) else int(ids)


def generation_options(config, gen, *, vocab_size: int, eos, default_max_length) -> dict:
    """generate's defaults by transformers' names, from the checkpoint's generation
    config over transformers' global defaults, checked as generate checks a keyword.
    `default_max_length` is used when the checkpoint sets no max_length (None: 20 new
    tokens after the prompt, as transformers does for decoder-only models). `eos` is
    not needed any more (the program drops bad words equal to an end token, as
    transformers does, for the call's end tokens)."""
    for field, off in _unsupported_fields().items():
        value = getattr(gen, field, off)
        if value not in (off, None) and value != off:
            raise UnsupportedConfig(f"import_hf: generation_config.{field} = {value!r} is not supported yet")
    forced_eos = single_id(getattr(gen, "forced_eos_token_id", None), "forced_eos_token_id")
    # every generate input that is a generation_config field, from the generation
    # library's registry (transformers' global default where the checkpoint has none)
    opts = {}
    inputs = {i.name: i for i in generate_inputs()}
    given = {"forced_eos_token_id": forced_eos}
    vocab = {"decoder_vocab_size" if getattr(config, "is_encoder_decoder", False) else "vocab_size": vocab_size}
    for field, default in generation_config_defaults().items():
        value = given[field] if field in given else getattr(gen, field, None)
        try:
            value = default if value is None else inputs[field].check(value, vocab)
        except ValueError as e:
            raise UnsupportedConfig(f"import_hf: generation_config.{field} = {value!r}: {e}") from None
        if value is not default and inputs[field].config_form is not None:  # token sequences, sequence_bias
            value = inputs[field].config_form(getattr(gen, field))
        opts[field] = value.tolist() if hasattr(value, "tolist") else value
    if getattr(gen, "min_new_tokens", None) is not None:
        opts["min_new_tokens"] = int(gen.min_new_tokens)  # counted after the prompt at run time
    max_length = getattr(gen, "max_length", None)
    opts.update(max_length=default_max_length if max_length is None else int(max_length))
    return opts


LINEAR_SUFFIXES = ("_proj.weight", "fc1.weight", "fc2.weight")


def quantize_linears(weights: dict, names, mode: str) -> None:
    """The build step of linear_int8 / linear_w8a8: every named linear weight becomes
    int8 rows plus one f32 scale per row (w8a8: packed for VNNI), stored as
    `<name>.<mode>` and `<name>.scale`; the exporter keeps only what the traced
    program uses, so the f32 originals of quantized layers are not written."""
    from ..quantize import pack_w8a8, quantize_int8

    for name in dict.fromkeys(names):
        q, scale = quantize_int8(weights[name])
        weights[f"{name}.{mode}"] = q if mode == "int8" else pack_w8a8(q)
        weights[f"{name}.scale"] = scale
