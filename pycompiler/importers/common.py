"""What every architecture's importer shares: reading a checkpoint with transformers'
own from_pretrained, storing tied weights once, the generation_config fields every
generate reads.

An architecture module (importers/<model_type>.py) turns a config into its spec,
its state dict into the weights its model file names, and lists its metadata;
importers/__init__.py maps model_type to it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Optional

from ..generation import config_fields
from ..generation.search import generate_inputs, generation_config_defaults
from ..generation.processors import import_fields
from ..unsupported import UnsupportedConfig  # noqa: F401  (importers and plugins take it from here)

# Rope types whose frequencies do not change with the sequence length: the program stores
# the loaded model's frequencies once (the others are refused at import).
STATIC_ROPE = ("default", "linear", "llama3", "yarn")


LINEAR_SUFFIXES = ("_proj.weight", "fc1.weight", "fc2.weight")


def linear_weights_ending(*suffixes) -> Callable:
    """A linear_weights function: the 2-D weights whose names end with `suffixes`, and the output matrix."""
    def linear_weights(spec, w: dict) -> list:
        return [n for n in w if n.endswith(suffixes) and w[n].ndim == 2] + [spec.lm_head]
    return linear_weights


def spec_meta(spec) -> dict:
    """The meta.json entries of a spec with the usual fields: its end and padding ids and
    vocabulary; an encoder-decoder's (it has decoder_start_token_id) decoder start and
    decoder vocabulary (decoder_vocab_size where the spec has one, else vocab_size); and
    max_position_embeddings where the spec has it (T5's positions are relative)."""
    meta = {"pad_token_id": spec.pad_token_id, "eos_token_id": spec.eos_token_id}
    if hasattr(spec, "decoder_start_token_id"):
        meta.update(decoder_start_token_id=spec.decoder_start_token_id, vocab_size=spec.vocab_size,
                    decoder_vocab_size=getattr(spec, "decoder_vocab_size", spec.vocab_size))
    else:
        meta["vocab_size"] = spec.vocab_size
    if hasattr(spec, "max_position_embeddings"):
        meta["max_position_embeddings"] = spec.max_position_embeddings
    return meta


@dataclass(frozen=True, init=False)
class Architecture:
    """How one model_type is imported (an entry of importers.ARCHITECTURES, built in or
    added with register_architecture). Checked when made: a bad field is a TypeError or
    ValueError naming it. The fields after `build` are keywords only, with defaults."""
    model_class: str  # the transformers class that loads the checkpoint
    spec_from_config: Callable  # (config, generation_config) -> the model file's spec, or UnsupportedConfig
    weights: Callable  # (spec, state) -> {name: array} under the names the model file reads
    build: Callable  # (spec, weights, meta) -> ProgramBuilder: the model file's builder
    linear_weights: Callable  # (spec, weights) -> [name]: the linear weights quantize= may quantize (schemes.Plan)
    meta: Callable  # spec -> this architecture's meta.json entries
    # (spec, loaded model) -> {name: array} or None: the weights the state dict lacks (buffers),
    # made from the loaded model; it may also set spec fields from it (rope_scale)
    from_model: Optional[Callable]
    # The kind of tokenizer the text library reads for it (tokenizer_files.py): "tokenizer.json"
    # (the kind that file is: byte-level or sentencepiece-style BPE), a kind that needs other
    # files ("marian-spm", "t5-spm", ...), or None (not read: the import carries none).
    tokenizer: Optional[str]

    # keyword-only (not dataclasses.KW_ONLY: Python 3.9), so that a call that passes
    # linear_weights and meta by position, as they once were, is refused, not misread
    def __init__(self, model_class: str, spec_from_config: Callable, weights: Callable, build: Callable, *,
                 linear_weights: Callable = linear_weights_ending(*LINEAR_SUFFIXES), meta: Callable = spec_meta,
                 from_model: Optional[Callable] = None, tokenizer: Optional[str] = "tokenizer.json"):
        given = locals()
        for f in fields(self):
            object.__setattr__(self, f.name, given[f.name])
        self._check()

    def _check(self):
        from ..tokenizer_files import TOKENIZER_KINDS

        if not isinstance(self.model_class, str) or not self.model_class:
            raise TypeError(f"Architecture: model_class must be the name of a transformers class, "
                            f"not {self.model_class!r}")
        for name in ("spec_from_config", "weights", "build", "linear_weights", "meta", "from_model"):
            value = getattr(self, name)
            if not callable(value) and not (name == "from_model" and value is None):
                raise TypeError(f"Architecture({self.model_class}): {name} must be callable, not {value!r}")
        if self.tokenizer is not None and self.tokenizer not in TOKENIZER_KINDS:
            raise ValueError(f"Architecture({self.model_class}): tokenizer {self.tokenizer!r} is not a kind the "
                             f"text library reads (None, {', '.join(map(repr, TOKENIZER_KINDS))})")


def _refuse_unhonoured(gen, transformers) -> None:
    """UnsupportedConfig for a generation_config value the program cannot honour (the
    table of generation/config_fields.py gives the reason), or for a field this
    version does not classify (a newer transformers') set to other than its default."""
    blank = transformers.GenerationConfig().to_dict()
    for name, value in gen.to_dict().items():
        if name in config_fields.FIELDS:
            reason = config_fields.refusal(name, value)
        elif name in blank and value != blank[name]:
            reason = (f"the field is new to this tensorvm (transformers {transformers.__version__}); "
                      "generation/config_fields.py does not classify it")
        else:  # a model's own entry (Whisper's lang_to_id), read by its importer if at all
            continue
        if reason is not None:
            raise UnsupportedConfig(f"import_hf: generation_config.{name} = {value!r} is not supported: {reason}")


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


def start_and_pad(config, gen, eos) -> tuple:
    """An encoder-decoder's decoder_start_token_id and pad_token_id (generation_config over
    config). Without a pad token, finished rows are padded with the first end token, as
    transformers' generate does (_prepare_special_tokens); `eos` is eos_ids' result."""
    start = gen.decoder_start_token_id if gen.decoder_start_token_id is not None else config.decoder_start_token_id
    if start is None:  # transformers' fallback (_prepare_special_tokens)
        start = gen.bos_token_id if gen.bos_token_id is not None else config.bos_token_id
    if start is None:
        raise UnsupportedConfig("import_hf: the checkpoint names no decoder_start_token_id (nor bos_token_id)")
    pad = gen.pad_token_id if gen.pad_token_id is not None else config.pad_token_id
    if pad is None:
        pad = first(eos)
    return single_id(start, "decoder_start_token_id"), single_id(pad, "pad_token_id")


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
    _refuse_unhonoured(gen, _transformers()[1])
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
    if opts["max_length"] is None:
        opts["max_length"] = default_max_length
    opts["return_dict_in_generate"] = bool(getattr(gen, "return_dict_in_generate", None))  # Program.generate's
    # the processors' import-time fields (Whisper's no_timestamps_token_id): None when absent
    for field in import_fields():
        value = getattr(gen, field, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or
                                  not 0 <= value < vocab_size):
            raise UnsupportedConfig(f"import_hf: generation_config.{field} = {value!r} is not a token id of the "
                                    f"vocabulary ({vocab_size}) nor an index in it")
        opts[field] = value
    return opts


# Shared by the decoder-only importers (GPT-2, GPT-NeoX, OPT, Phi, Llama) and by plugins: their specs
# name eos_token_id, pad_token_id, vocab_size, max_position_embeddings and lm_head.

def decoder_only_fields(config, gen, vocab_size: int) -> dict:
    """The spec fields of a decoder-only model's end and padding tokens and generate
    defaults: eos_token_id, pad_token_id (the first end token when the checkpoint has
    none, as transformers pads) and generation."""
    eos = eos_ids(config, gen, vocab_size)
    pad = gen.pad_token_id if gen.pad_token_id is not None else config.pad_token_id
    return {"eos_token_id": eos, "pad_token_id": first(eos) if pad is None else single_id(pad, "pad_token_id"),
            "generation": generation_options(config, gen, vocab_size=vocab_size, eos=eos, default_max_length=None)}


def rotary_from_model(spec, rotary_emb, rotary_dim: int, why: str = "") -> dict:
    """A from_model of a rotary model: the weight `rotary.inv_freq` and spec.rope_scale from
    the loaded model's rotary embedding (inv_freq with rope scaling applied,
    attention_scaling), checked to cover rotary_dim features (`why`: what the refusal adds)."""
    inv_freq = rotary_emb.inv_freq.detach().float().numpy().copy()
    spec.rope_scale = float(rotary_emb.attention_scaling)
    if inv_freq.shape != (rotary_dim // 2,):
        raise UnsupportedConfig(f"import_hf: rotary inv_freq has shape {inv_freq.shape}, "
                                f"expected [{rotary_dim // 2}]{why}")
    return {"rotary.inv_freq": inv_freq}


def check_static_rope(rope_type: str) -> None:
    """UnsupportedConfig unless rope_type's frequencies do not change with the length."""
    if rope_type not in STATIC_ROPE:
        raise UnsupportedConfig(f"import_hf: rope_type '{rope_type}' is not supported ({', '.join(STATIC_ROPE)})")


def rotary_dim(config, head_dim: int) -> int:
    """The features of each head that rotary embedding turns (head_dim * partial_rotary_factor),
    for a rope type whose frequencies do not change with the length, or UnsupportedConfig."""
    rope = dict(getattr(config, "rope_parameters", None) or {})
    check_static_rope(rope.get("rope_type", "default"))
    factor = rope.get("partial_rotary_factor", 1.0)
    dim = int(head_dim * factor)
    if dim % 2 or dim <= 0:
        raise UnsupportedConfig(f"import_hf: {dim} rotary features per head (head_dim {head_dim} x "
                                f"partial_rotary_factor {factor}): need a positive even number")
    return dim
