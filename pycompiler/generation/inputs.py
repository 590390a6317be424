"""generate's keyword inputs (transformers' names) and their Python-side checks.

An `Input` is one keyword of `generate`: its name, how `Program.generate` checks
and converts a Python value before anything runs (`check(value, meta)`), and
whether it is a program input or fixed at import. The search (search.py) and
every processor (processors.py) declare the inputs they read; the program's
`generate` signature and the Python wrapper's list of accepted keywords are
derived from those declarations, never written out a second time.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .checks import NOT_NAN, at_least, got, must_be

NO_DEFAULT = object()  # an input that is no generation_config field (max_new_tokens, seed, ...)


@dataclass(frozen=True)
class Input:
    """One keyword of generate. check(value, meta) -> the value the program takes
    (meta is the program's meta.json, for the vocabulary size); None is never
    passed to it (None means the checkpoint's default). `default` is transformers'
    global default (GenerationConfig) where the input is a generation_config field:
    the importer reads the checkpoint's value of every such field."""
    name: str
    check: Callable[[Any, dict], Any]
    doc: str = ""
    default: Any = NO_DEFAULT
    # "tokens", "sequences", "bias": a token id list, token sequences, sequence biases
    # (their checkpoint defaults are stored as weights, in the program's form); "bool":
    # True or False (meta.json's bool_options: the command line reads 1 and 0 as them)
    kind: str = ""
    # the generation_config (JSON) form of a value, for meta.json; None: check's result
    config_form: Callable[[Any], Any] | None = None


def _int(name, v, low=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ValueError(f"generate: {name} must be an int, got {v!r}")
    v = int(v)
    if low is not None and v < low:
        raise ValueError(got(at_least(name, low), v))
    return v


def _float(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"generate: {name} must be a number, got {v!r}")
    return float(v)


def int_input(name: str, low: int | None = None, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    return Input(name, lambda v, meta: _int(name, v, low), doc, default)


def bool_input(name: str, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    def check(v, meta):
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"generate: {name} must be True or False, got {v!r}")
        return bool(v)
    return Input(name, check, doc, default, kind="bool")


def float_input(name: str, ok: Callable[[float], bool] = lambda v: v == v, what: str = NOT_NAN,
                doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """A float; `ok` says which values are allowed and `what` names them in the error."""
    def check(v, meta):
        v = _float(name, v)
        if not ok(v):
            raise ValueError(got(must_be(name, what), v))
        return v
    return Input(name, check, doc, default)


def output_vocabulary(meta: dict):
    """(size, what to call it) of the vocabulary generate chooses tokens from: an
    encoder-decoder's decoder vocabulary, a decoder-only model's vocabulary."""
    if "decoder_vocab_size" in meta:
        return meta["decoder_vocab_size"], "decoder vocabulary"
    return meta.get("vocab_size"), "vocabulary"


def token_input(name: str, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """A token id of the vocabulary generate chooses from."""
    def check(v, meta):
        v = _int(name, v, 0)
        vocab, what = output_vocabulary(meta)
        if vocab is not None and v >= vocab:
            raise ValueError(f"generate: {name} {v} is not in the {what} ({vocab})")
        return v
    return Input(name, check, doc, default)


def token_list_input(name: str, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """A list of token ids, passed to the program as an int64 [n] tensor."""
    def check(v, meta):
        a = np.asarray(list(v) if not isinstance(v, np.ndarray) else v)
        if a.size and (a.ndim != 1 or a.dtype.kind not in "iu"):
            raise ValueError(f"generate: {name} must be a list of token ids, got {v!r}")
        a = np.ascontiguousarray(a.reshape(-1), dtype=np.int64)
        vocab, what = output_vocabulary(meta)
        if vocab is not None and a.size and (a.min() < 0 or a.max() >= vocab):
            raise ValueError(f"generate: {name} {a.tolist()} are not all in the {what} ({vocab})")
        return a
    return Input(name, check, doc, default, kind="tokens")


def seed_input(name: str = "seed") -> Input:
    def check(v, meta):
        v = _int(name, v)
        if not -(2 ** 63) <= v < 2 ** 64:
            raise ValueError(f"generate: {name} must fit in 64 bits, got {v}")
        return v - 2 ** 64 if v >= 2 ** 63 else v
    return Input(name, check, "seed of the program's random generator (sampling)")


def choice_input(name: str, choices: tuple, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    def check(v, meta):
        for c in choices:
            if (isinstance(c, bool) and isinstance(v, (bool, np.bool_)) and bool(v) == c) or \
                    (isinstance(c, str) and v == c):
                return c
        raise ValueError(f"generate: {name} must be {', '.join(repr(c) for c in choices[:-1])} or {choices[-1]!r}, "
                         f"got {v!r}")
    return Input(name, check, doc, default)


def _sequence(name, seq, meta):
    """One token sequence of a list option: a non-empty list of ids of the vocabulary."""
    if isinstance(seq, np.ndarray):
        seq = seq.tolist()
    if not isinstance(seq, (list, tuple)) or not seq or any(
            isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0 for t in seq):
        raise ValueError(f"generate: each entry of {name} must be a non-empty list of token ids, got {seq!r}")
    vocab, what = output_vocabulary(meta)
    if vocab is not None and max(seq) >= vocab:
        raise ValueError(f"generate: {name} entry {list(seq)} is not in the {what} ({vocab})")
    return [int(t) for t in seq]


def right_aligned(seqs, width: int | None = None) -> np.ndarray:
    """Token sequences as int64 [n, longest], each right-aligned, -1 before it."""
    width = max((len(q) for q in seqs), default=1) if width is None else width
    out = np.full((len(seqs), width), -1, np.int64)
    for i, q in enumerate(seqs):
        out[i, width - len(q):] = q
    return out


def token_sequences_input(name: str, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """A list of token sequences (transformers' bad_words_ids: [[ids], ...]), passed to
    the program as int64 [n, longest], each sequence right-aligned after -1s."""
    def check(v, meta):
        if isinstance(v, np.ndarray) and v.ndim == 2 and v.dtype.kind in "iu":  # the program's form
            v = [[int(t) for t in row if t >= 0] for row in v]
        if not isinstance(v, (list, tuple)) or not v:
            raise ValueError(f"generate: {name} must be a non-empty list of lists of token ids, got {v!r}")
        return right_aligned([_sequence(name, q, meta) for q in v])

    def config_form(v):
        return [[int(t) for t in row if t >= 0] for row in check(v, {}).tolist()]
    return Input(name, check, doc, default, kind="sequences", config_form=config_form)


def _bias_pairs(name, v):
    """transformers' sequence_bias, a dict {(ids): bias} or a list [[ids], bias], as
    (ids, bias) pairs; a later entry for the same ids wins, as building the dict does."""
    if isinstance(v, np.ndarray) and v.ndim == 2 and v.dtype.kind == "f" and v.shape[1] >= 2:  # the program's form
        v = [[[int(t) for t in row[1:] if t >= 0], float(row[0])] for row in v]
    if isinstance(v, dict):
        items = list(v.items())
    elif isinstance(v, (list, tuple)) and all(isinstance(e, (list, tuple)) and len(e) == 2 for e in v):
        items = [(tuple(e[0]) if isinstance(e[0], (list, tuple)) else e[0], e[1]) for e in v]
    else:
        items = None
    if not items:
        raise ValueError(f"generate: {name} must be a non-empty dict {{(token ids): bias}} or list "
                         f"[[token ids], bias], got {v!r}")
    out = {}
    for ids, bias in items:
        if not isinstance(ids, tuple):
            raise ValueError(f"generate: {name} keys must be tuples of token ids, got {ids!r}")
        if isinstance(bias, bool) or not isinstance(bias, numbers.Real) or bias != bias:
            raise ValueError(f"generate: {name} biases must be numbers, got {bias!r}")
        out[ids] = float(bias)
    return out


def sequence_bias_input(name: str, doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """transformers' sequence_bias, passed to the program as f32 [n, 1 + longest]:
    column 0 the bias, then the token ids right-aligned after -1s. A bias of a
    multi-token sequence must be finite (bad_words_ids bans sequences)."""
    def check(v, meta):
        pairs = _bias_pairs(name, v)
        seqs = [_sequence(name, list(ids), meta) for ids in pairs]
        for ids, bias in pairs.items():
            if len(ids) > 1 and not np.isfinite(bias):
                raise ValueError(f"generate: {name} {list(ids)}: a sequence of several tokens needs a finite bias "
                                 "(bad_words_ids bans a sequence)")
        out = np.concatenate([np.asarray(list(pairs.values()), np.float32)[:, None],
                              right_aligned(seqs).astype(np.float32)], axis=1)
        if out.shape[1] > 1 and np.abs(out[:, 1:]).max() >= 2 ** 24:
            raise ValueError(f"generate: {name} token ids must be below 2**24 (they travel as f32)")
        return out

    def config_form(v):
        return [[list(ids), bias] for ids, bias in _bias_pairs(name, v).items()]
    return Input(name, check, doc, default, kind="bias", config_form=config_form)
