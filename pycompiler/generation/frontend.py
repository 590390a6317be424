"""`Program.generate`: transformers' generate() keywords over a program's `generate`.

    seqs = generate(prog, ids, mask)                                  # the checkpoint's defaults
    seqs = generate(prog, ids, mask, num_beams=1, max_new_tokens=32)  # greedy
    out = generate(prog, ids, mask, num_beams=4, num_return_sequences=2, output_scores=True,
                   return_dict_in_generate=True)
    out.sequences, out.sequences_scores, out.scores

Every option is an input of the program's `generate` function (the search runs
inside the program, in the VM); this wrapper only checks and converts the
options, so that a bad request is a clear Python error before anything runs.
Defaults (None) are the imported checkpoint's generation_config, baked into the
program and listed in meta.json. A request the program cannot honour is an
error, never a silently different result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import checks, config_fields
from .search import generate_inputs
from .streaming import check_streamer, streamer_callback

# The keywords `generate` takes, as transformers names them (the program's inputs
# after input_ids and attention_mask), and how each is checked: from the search's
# and the processors' declarations.
INPUTS = {i.name: i for i in generate_inputs()}
OPTIONS = tuple(INPUTS)
# Accepted by this wrapper only (they choose what is returned).
WRAPPER_OPTIONS = ("return_dict_in_generate",)
_MISSING = object()


def _accepted(name: str, value, meta: dict) -> bool:
    """Whether keyword `name` reaches the program (True), or changes nothing here and is
    dropped (False); raises, with the reason, for a keyword that cannot be honoured."""
    if name in OPTIONS or name in WRAPPER_OPTIONS:
        return True
    reason = config_fields.refusal(name, value)
    if reason is not None:
        shown = repr(value) if len(repr(value)) <= 60 else f"<{type(value).__name__}>"
        raise ValueError(f"generate: {name}={shown} is not supported: {reason}")
    field = config_fields.FIELDS.get(name)
    if field is not None and field.fixed:
        own = meta.get(name, (meta.get("generation") or {}).get(name, _MISSING))
        if value is not None and (own is _MISSING or value != own):
            theirs = "it has none" if own is _MISSING else f"this program's is {own!r}"
            raise ValueError(f"generate: {name} is fixed at import (the checkpoint's generation_config): {theirs}, "
                             f"not {value!r}")
        return False
    if field is not None or name in config_fields.CALL_ARGUMENTS:
        return False  # not applicable, or an off value: transformers computes the same as without it
    raise TypeError(f"generate: unknown option {name!r}: it is no option of this program nor a field of "
                    f"transformers' GenerationConfig (this program takes {[*OPTIONS, *WRAPPER_OPTIONS]})")


@dataclass
class GenerateOutput:
    """What transformers' generate returns with return_dict_in_generate=True."""
    sequences: np.ndarray
    sequences_scores: Optional[np.ndarray] = None  # beam search with output_scores: [batch * num_return_sequences]
    scores: Optional[tuple] = None  # output_scores: one [rows, vocab] array per step (processed scores)
    logits: Optional[tuple] = None  # output_logits: one [rows, vocab] array per step (raw logits)

    def __getitem__(self, key):
        return getattr(self, key)

    def keys(self):
        return [k for k in ("sequences", "sequences_scores", "scores", "logits") if getattr(self, k) is not None]


def _ids(array, name: str) -> np.ndarray:
    a = np.asarray(array)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.dtype.kind not in "iu":
        raise ValueError(f"generate: {name} must be an int array [batch, length], got {a.dtype}{list(a.shape)}")
    return np.ascontiguousarray(a, dtype=np.int64)


def _check(options: dict, meta: dict) -> dict:
    """Types and ranges of the options, as transformers checks them; returns the values
    the program takes (None stays None: the program's default)."""
    return {name: None if v is None else INPUTS[name].check(v, meta) for name, v in options.items()}


def _features(array) -> np.ndarray:
    a = np.asarray(array)
    if a.ndim != 3 or a.dtype.kind != "f":
        raise ValueError(f"generate: input_features must be a float array [batch, n_mels, frames], "
                         f"got {a.dtype}{list(a.shape)}")
    if a.shape[0] == 0:
        raise ValueError(checks.no_rows("input_features"))
    return np.ascontiguousarray(a, dtype=np.float32)


def _keywords(program, kwargs: dict) -> tuple:
    """(generate's parameters, meta, decoder-only?, the keywords that reach the program)."""
    params = [p.name for p in program.function("generate").params]
    meta = program.meta or {}
    decoder_only = meta.get("is_encoder_decoder") is False
    if decoder_only and kwargs.get("decoder_input_ids") is not None:
        raise ValueError("generate: decoder_input_ids is for encoder-decoder models; a decoder-only model's prompt "
                         "is input_ids")
    kwargs = {name: v for name, v in kwargs.items() if _accepted(name, v, meta)}
    for name in kwargs:
        if name in OPTIONS and name not in params and kwargs[name] is not None:
            raise ValueError(f"generate: this program's generate has no input {name!r} (it takes {params[1:]}); "
                             "re-import the checkpoint with this version of tensorvm")
    return params, meta, decoder_only, kwargs


def _source(first: str, input_ids, input_features):
    """The encoder's input (a decoder-only model's prompt), given once: an encoder that
    reads features (Whisper) names its input input_features, as transformers does."""
    if (input_ids is None) == (input_features is None):
        raise TypeError(f"generate: pass the encoder's input, {first}, once (positionally or by name)")
    if input_features is not None and first != "input_features":
        raise ValueError(f"generate: this program's encoder takes {first}, not input_features")
    return input_ids if input_features is None else input_features


def _encoder_input(first: str, source, attention_mask, decoder_only: bool) -> tuple:
    """(ids or features, attention mask, source length to check against the position table)."""
    if first == "input_features":
        ids = _features(source)
        mask = None if attention_mask is None else _ids(attention_mask, "attention_mask")
        if mask is not None and mask.shape != (ids.shape[0], ids.shape[2]):
            raise ValueError(f"generate: attention_mask {list(mask.shape)} must be [batch, frames] "
                             f"{[ids.shape[0], ids.shape[2]]}")
        return ids, mask, 0  # the program's encoder checks the frames
    ids = _ids(source, "input_ids")
    mask = np.ones_like(ids) if attention_mask is None else _ids(attention_mask, "attention_mask")
    if mask.shape != ids.shape:
        raise ValueError(f"generate: attention_mask {list(mask.shape)} does not match input_ids {list(ids.shape)}")
    if ids.shape[0] == 0:
        raise ValueError(checks.no_rows("input_ids"))
    if ids.shape[1] == 0:
        raise ValueError(checks.no_tokens("prompt" if decoder_only else "source"))
    return ids, mask, ids.shape[1]


def _prompt_length(opts: dict, ids: np.ndarray, first: str, decoder_only: bool) -> int:
    """The decoder prompt's length (a decoder-only model's input_ids, else
    decoder_input_ids or the start token); decoder_input_ids is converted in `opts`."""
    if opts.get("decoder_input_ids") is None:
        return ids.shape[1] if decoder_only else 1
    prompt = _ids(opts["decoder_input_ids"], "decoder_input_ids")
    if prompt.shape[0] != ids.shape[0]:
        raise ValueError(checks.got(checks.prompt_rows(first), f"{list(prompt.shape)} for {ids.shape[0]} rows"))
    if prompt.shape[1] == 0:
        raise ValueError(checks.PROMPT_EMPTY)
    opts["decoder_input_ids"] = prompt
    return prompt.shape[1]


def _check_search(value) -> None:
    """num_return_sequences against the search (value(name): the call's or the default)."""
    beams, sample, n = value("num_beams") or 1, bool(value("do_sample")), value("num_return_sequences") or 1
    if beams == 1 and not sample and n != 1:
        raise ValueError(checks.got(checks.GREEDY_ONE_SEQUENCE, f"{n} (it needs num_beams >= {n} or do_sample=True)"))
    if beams > 1 and n > beams:
        raise ValueError(checks.got(checks.RETURN_AT_MOST_BEAMS, f"{n} for num_beams={beams}"))


def _check_lengths(value, meta: dict, prompt_len: int, source_len: int, decoder_only: bool) -> None:
    """The length limit as the program computes it (max_new_tokens, the call's or the
    checkpoint's, wins over max_length), against the prompt and the position table."""
    max_pos = meta.get("max_position_embeddings")
    if value("max_new_tokens") is not None:
        limit = value("max_new_tokens") + prompt_len
    elif value("max_length") is not None:
        limit = value("max_length")
    else:
        limit = checks.default_max_length(prompt_len, max_pos)
    if limit < 2:
        raise ValueError(checks.got(checks.LIMIT_AT_LEAST_2, limit))
    if limit <= prompt_len:
        what = "input_ids" if decoder_only else "decoder_input_ids"
        raise ValueError(checks.got(checks.limit_after_prompt(what),
                                    f"max_length {limit} for a prompt of {prompt_len}"))
    if max_pos is not None and source_len > max_pos:
        raise ValueError(checks.got(checks.too_long("prompt" if decoder_only else "source", max_pos), source_len))
    if max_pos is not None and limit > max_pos:
        raise ValueError(checks.got(checks.past_positions(max_pos), limit))


def _output(out, as_dict: bool, value):
    """The sequences, or a GenerateOutput with what was asked for."""
    out = out if isinstance(out, (list, tuple)) else (out,)
    sequences = out[0]
    if not as_dict:
        return sequences
    seq_scores = out[1] if len(out) > 1 else None
    steps = out[2] if len(out) > 2 else None
    raw = out[3] if len(out) > 3 else None
    return GenerateOutput(
        sequences=sequences,
        sequences_scores=seq_scores if value("output_scores") else None,
        scores=tuple(np.asarray(s) for s in steps) if (value("output_scores") and steps is not None) else None,
        logits=tuple(np.asarray(s) for s in raw) if (value("output_logits") and raw is not None) else None)


def generate(program, input_ids=None, attention_mask=None, *, engine: str = "vm", streamer=None,
             input_features=None, **kwargs):
    """Sequences [batch * num_return_sequences, length] (int64), as `model.generate(...)`
    returns them; a GenerateOutput (sequences, sequences_scores, scores) when
    return_dict_in_generate, output_scores or output_logits is asked. engine="replay" runs the same
    program text line by line in Python with the reference ops (slow; for debugging).
    `streamer` follows transformers' protocol (TextStreamer, TextIteratorStreamer):
    put(prompt), put(tokens) as each step chooses them, end() (see streaming.py)."""
    if "generate" not in program.functions:
        raise ValueError(f"{program.path} has no generate function (it has {program.functions})")
    check_streamer(streamer, program)
    params, meta, decoder_only, kwargs = _keywords(program, kwargs)
    first = params[0]
    source = _source(first, input_ids, input_features)
    defaults = dict(meta.get("generation") or {})
    as_dict = kwargs.pop("return_dict_in_generate", None)
    as_dict = bool(defaults.get("return_dict_in_generate") if as_dict is None else as_dict) or \
        bool(kwargs.get("output_scores")) or bool(kwargs.get("output_logits"))
    defaults.setdefault("max_length", meta.get("max_length", 20))
    defaults.setdefault("num_beams", meta.get("num_beams", 1))
    opts = _check(kwargs, meta)
    ids, mask, source_len = _encoder_input(first, source, attention_mask, decoder_only)
    prompt_len = _prompt_length(opts, ids, first, decoder_only)

    def value(name):
        return defaults.get(name) if opts.get(name) is None else opts[name]

    _check_search(value)
    _check_lengths(value, meta, prompt_len, source_len, decoder_only)
    inputs = {first: ids, "attention_mask": mask, **opts}
    if as_dict and "output_scores" in params:
        inputs.setdefault("output_scores", None)
    args = [inputs.get(p) for p in params]
    if engine not in ("vm", "replay"):
        raise ValueError(f"generate: engine must be 'vm' or 'replay', got {engine!r}")
    on_emit = streamer_callback(streamer) if streamer is not None else None
    out = (program.run if engine == "vm" else program.replay)("generate", *args, on_emit=on_emit)
    if streamer is not None:
        streamer.end()
    return _output(out, as_dict, value)
