"""The end tokens, several of them as transformers allows (Llama 3 ships several):
the generate input `eos_token_id` and how the search tests a token against them.

The model's TokenIds.eos is the default; `generate(..., eos_token_id=[a, b])`
replaces it for one call, as transformers' generate keyword does. Inside the
program the set is a bool [vocab] mask (a token is an end token when
mask[token]), made once per call, so that a row stops on ANY of them at the cost
of one index_select per step, and min_length bans all of them.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops as T
from .inputs import Input, token_list_input


def _check(v, meta):
    """An int or a list of ints, as transformers' eos_token_id."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        v = [v]
    out = token_list_input("eos_token_id").check(v, meta)
    if out.size == 0:
        raise ValueError("generate: eos_token_id must name at least one token")
    return out


EOS_INPUT = Input("eos_token_id", _check, "the end token id, or a list of them (a row ends on any); "
                  "default: the model's", kind="tokens")


def vocabulary(ids) -> str:
    """What error messages call the vocabulary generate chooses from (as
    inputs.output_vocabulary does on the Python side)."""
    return "vocabulary" if ids.decoder_start is None else "decoder vocabulary"


def resolve(eos_token_id, ids):
    """The call's end tokens [n] (int64) from the input (None: the model's ids.eos),
    checked, and their [vocab] mask."""
    default = T.concat(*(T.full([1], e, dtype="i64") for e in ids.eos), dim=0) if len(ids.eos) > 1 else \
        T.full([1], ids.eos[0], dtype="i64")
    eos = T.if_none(eos_token_id, default)
    T.check(T.gt(T.size(eos, 0), 0), "generate: eos_token_id must name at least one token")
    # scatter itself refuses an id outside the vocabulary, naming the op; this names the input
    T.check(T.all(T.logical_and(T.ge(eos, 0), T.lt(eos, ids.vocab_size))),
            f"generate: eos_token_id is not in the {vocabulary(ids)}")
    return eos, T.scatter(T.full([ids.vocab_size], False, dtype="bool"), 0, eos, True)


def first(eos):
    """The first end token (transformers fills with `pad_token_id or eos_token_id[0]`)."""
    return T.item(T.slice(eos, 0, 0, 1))


def is_eos(mask, tokens):
    """Whether each of `tokens` (any shape, int64) is an end token: bool, tokens' shape."""
    flat = T.reshape(tokens, [-1])
    return T.reshape(T.index_select(mask, 0, flat), T.shape(tokens))


def normalize(eos) -> tuple:
    """int or ints -> a non-empty tuple of ints (TokenIds.eos)."""
    if isinstance(eos, (numbers.Integral, np.integer)) and not isinstance(eos, bool):
        eos = (eos,)
    out = tuple(int(e) for e in eos)
    if not out:
        raise ValueError("TokenIds: eos must name at least one token")
    return out
