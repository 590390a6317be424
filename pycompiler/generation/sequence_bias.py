"""Biases on token sequences: transformers' SequenceBiasLogitsProcessor and
NoBadWordsLogitsProcessor (a bias of -inf), as program functions.

An entry (ids, bias) adds `bias` to the score of its last token in a row when
its other tokens are the row's last tokens; a one-token entry applies at every
step. The program takes the entries as one tensor (inputs.py): bad_words_ids as
int64 [n, L], sequence_bias as f32 [n, 1 + L] (column 0 the bias), each entry
right-aligned after -1s. `split` turns that, once per call, into what a step
needs: the one-token entries as a [vocab] mask or bias vector (one pass over the
scores per step, as suppress_tokens) and the longer ones as prefix [n, L-1],
last token [n] and which of them to test; a step compares the row's last L-1
tokens with every prefix at once (`matches`).
"""
from __future__ import annotations

import math

from .. import ops as T
from ..control import cond
from .end_tokens import vocabulary


def split(words, ids, what: str):
    """words: int64 [n, L] (-1 before each entry) -> (prefix [n, L-1], last [n],
    single [n] bool: the one-token entries), with its checks."""
    T.check(T.all(T.logical_and(T.ge(words, -1), T.lt(words, ids.vocab_size))),
            f"generate: {what} are not all in the {vocabulary(ids)}")
    n, width = T.size(words, 0), T.size(words, 1)
    last = T.reshape(T.slice(words, 1, T.sub(width, 1), width), [n])
    T.check(T.all(T.ge(last, 0)), f"generate: every {what} entry needs at least one token, right-aligned")
    prefix = T.slice(words, 1, 0, T.sub(width, 1))
    return prefix, last, T.all(T.eq(prefix, -1), 1)


def spread(index, values, vocab: int, fill):
    """A [vocab] tensor with values[i] at index[i] where index[i] < vocab, `fill`
    elsewhere (index == vocab: not placed)."""
    base = T.full([T.add(vocab, 1)], fill, dtype="bool" if isinstance(fill, bool) else "f32")
    return T.slice(T.scatter(base, 0, index, values), 0, 0, vocab)


def matches(seq, cur_len, prefix):
    """[rows, n] bool: whether each row ends with each prefix ([n, M], -1 = any token).
    A row shorter than a prefix does not match it (transformers skips those)."""
    rows, M = T.size(seq, 0), T.size(prefix, 1)
    padded = T.concat(T.full([rows, M], -2, dtype="i64"), seq, dim=1)
    tail = T.slice(padded, 1, cur_len, T.add(cur_len, M))  # the row's last M tokens, -2 before its start
    same = T.logical_or(T.eq(T.unsqueeze(tail, 1), T.unsqueeze(prefix, 0)), T.unsqueeze(T.eq(prefix, -1), 0))
    return T.all(same, 2)


# ---------------------------------------------------------------- bad_words_ids

def resolve_bad_words(words, ctx):
    """Options of ban_bad_words from the int64 [n, L] entries. As transformers, a
    one-token entry that is an end token is dropped."""
    V = ctx.ids.vocab_size
    prefix, last, single = split(words, ctx.ids, "bad_words_ids")
    multi = T.logical_not(single)
    single = T.logical_and(single, T.logical_not(T.index_select(ctx.eos, 0, last)))
    banned = spread(T.where(single, last, V), True, V, False)
    # a one-token entry's last token is V in the table of longer ones: it bans nothing there
    return {"bad_words_banned": banned, "bad_words_prefix": prefix, "bad_words_last": T.where(multi, last, V),
            "bad_words_on": T.logical_or(T.any(banned), T.any(multi)), "bad_words_multi_on": T.any(multi)}


def ban_completions(scores, seq, cur_len, prefix, last):
    """The last token of every multi-token entry whose prefix ends the row (last = V
    for the others)."""
    V = T.size(scores, 1)
    index = T.where(matches(seq, cur_len, prefix), T.unsqueeze(last, 0), V)
    mask = T.scatter(T.full([T.size(scores, 0), T.add(V, 1)], False, dtype="bool"), 1, index, True)
    return T.masked_fill(scores, T.slice(mask, 1, 0, V), -math.inf)


def keep(scores, *rest):
    return scores


def ban_bad_words(scores, state, o):
    """NoBadWordsLogitsProcessor: one-token bad words always -inf (one pass, as the
    checkpoints' usual single bad word), the last token of a longer one -inf when its
    other tokens end the row."""
    scores = T.masked_fill(scores, o.bad_words_banned, -math.inf)
    return cond(o.bad_words_multi_on, ban_completions, keep, scores, state.seq, state.cur_len, o.bad_words_prefix,
                o.bad_words_last)


# ---------------------------------------------------------------- sequence_bias

def resolve_sequence_bias(table, ctx):
    """Options of add_sequence_bias from the f32 [n, 1 + L] table."""
    V = ctx.ids.vocab_size
    table = T.cast(table, "f32")  # a C++ caller may hand int biases
    n = T.size(table, 0)
    bias = T.reshape(T.slice(table, 1, 0, 1), [n])
    prefix, last, single = split(T.cast(T.slice(table, 1, 1, T.size(table, 1)), "i64"), ctx.ids, "sequence_bias")
    multi = T.logical_not(single)
    T.check(T.all(T.logical_or(single, T.lt(T.abs(bias), math.inf))),
            "generate: sequence_bias of several tokens needs a finite bias (bad_words_ids bans a sequence)")
    # one [n, vocab] row per multi-token entry with a 1 at its last token: a step's
    # biases are then one matmul of the [rows, n] matched biases with it (sums repeats)
    onehot = T.cast(T.logical_and(T.eq(T.unsqueeze(last, 1), T.unsqueeze(T.arange(0, V), 0)),
                                  T.unsqueeze(multi, 1)), "f32")
    # a one-token entry's value is 0 among the longer ones (its one-hot row is 0 too)
    return {"sequence_bias_single": spread(T.where(single, last, V), T.where(single, bias, 0.0), V, 0.0),
            "sequence_bias_prefix": prefix, "sequence_bias_values": T.where(multi, bias, 0.0),
            "sequence_bias_onehot": onehot, "sequence_bias_multi_on": T.any(multi), "sequence_bias_on": T.gt(n, 0)}


def add_single(scores, single, seq, cur_len, prefix, values, onehot):
    return T.add(scores, single)


def add_matched(scores, single, seq, cur_len, prefix, values, onehot):
    """transformers: bias = one-token biases + the biases of the matched longer
    entries summed per last token; scores + bias."""
    matched = T.where(matches(seq, cur_len, prefix), T.unsqueeze(values, 0), 0.0)
    return T.add(scores, T.add(single, T.matmul(matched, onehot)))


def add_sequence_bias(scores, state, o):
    """SequenceBiasLogitsProcessor."""
    return cond(o.sequence_bias_multi_on, add_matched, add_single, scores, o.sequence_bias_single, state.seq,
                state.cur_len, o.sequence_bias_prefix, o.sequence_bias_values, o.sequence_bias_onehot)
