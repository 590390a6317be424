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
    kind: str = ""  # "tokens": a token id list (its checkpoint default is stored as a weight)


def _int(name, v, low=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ValueError(f"generate: {name} must be an int, got {v!r}")
    v = int(v)
    if low is not None and v < low:
        raise ValueError(f"generate: {name} must be at least {low}, got {v}")
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
    return Input(name, check, doc, default)


def float_input(name: str, ok: Callable[[float], bool] = lambda v: v == v, what: str = "a number, not NaN",
                doc: str = "", default: Any = NO_DEFAULT) -> Input:
    """A float; `ok` says which values are allowed and `what` names them in the error."""
    def check(v, meta):
        v = _float(name, v)
        if not ok(v):
            raise ValueError(f"generate: {name} must be {what}, got {v}")
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
