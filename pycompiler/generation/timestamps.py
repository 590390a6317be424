"""Whisper's timestamp rule (transformers' WhisperTimeStampLogitsProcessor), a processor
of the chain (processors.py), on when generate's `return_timestamps` is True.

Timestamp tokens are the ids from no_timestamps_token_id + 1 on (<|0.00|>, <|0.02|>,
...). Each step, over the tokens generated since the prompt (`timestamps_from`):

- <|notimestamps|> is banned;
- timestamps come in pairs: after a pair the next token is text (or the end); after a
  single timestamp it is a timestamp or the end (every token below the end token is banned);
- they never go backwards: timestamps below the last one are banned (below it plus one
  after a pair, so a pair is never followed by the same time);
- the first generated token is a timestamp, at most max_initial_timestamp_index steps
  in (when the checkpoint sets it);
- when the timestamps' total probability (logsumexp of their log-softmax) exceeds every
  single text token's, every text token is banned.

The pairs rule reads each row's own tokens, so it is vectorised over rows: the last and
second-to-last generated tokens come from the row padded in front (two "timestamps"
before the first generated token, as transformers counts a row shorter than 2 as
having its penultimate a timestamp).
"""
from __future__ import annotations

import math

from .. import ops as T

_INF = -math.inf


def _last_column(x):
    n = T.size(x, 1)
    return T.squeeze(T.slice(x, 1, T.sub(n, 1), n), 1)


def _logsumexp(x):
    """torch.logsumexp over dim 1 ([rows, n] -> [rows]): -inf when the whole row is."""
    m = T.max(x, 1, keepdim=True)
    safe = T.where(T.eq(m, _INF), 0.0, m)
    return T.squeeze(T.where(T.eq(m, _INF), _INF, T.add(safe, T.log(T.sum(T.exp(T.sub(x, safe)), 1, keepdim=True)))),
                     1)


def timestamp_rules(scores, state, o):
    """WhisperTimeStampLogitsProcessor.__call__ on [rows, vocab] scores."""
    seq, cur_len = state.seq, state.cur_len
    rows, V = T.size(scores, 0), T.size(scores, 1)
    first = o.timestamp_begin  # the first timestamp token (a constant of the program)
    vocab = T.unsqueeze(T.arange(0, V), 0)  # [1, V]
    is_stamp = T.ge(vocab, first)
    scores = T.masked_fill(scores, T.eq(vocab, o.no_timestamps_token_id), _INF)

    gen = T.slice(seq, 1, o.timestamps_from, cur_len)  # [rows, n], n >= 0
    stamped = T.ge(gen, first)
    last = _last_column(T.concat(T.full([rows, 1], False, dtype="bool"), stamped, dim=1))
    before = T.concat(T.full([rows, 2], True, dtype="bool"), stamped, dim=1)
    penultimate = T.squeeze(T.slice(before, 1, T.sub(T.size(before, 1), 2), T.sub(T.size(before, 1), 1)), 1)
    pair_done = T.unsqueeze(T.logical_and(last, penultimate), 1)
    half_pair = T.unsqueeze(T.logical_and(last, T.logical_not(penultimate)), 1)
    # the call's end token (its lowest one): text is every id below it
    eos = T.argmax(T.cast(state.eos, "i64"), 0)
    scores = T.masked_fill(scores, T.logical_or(T.logical_and(pair_done, is_stamp),
                                                T.logical_and(half_pair, T.lt(vocab, eos))), _INF)

    # the row's last timestamp token: column 0 of `tokens` stands for "none"
    tokens = T.concat(T.full([rows, 1], -1, dtype="i64"), gen, dim=1)
    marks = T.concat(T.full([rows, 1], False, dtype="bool"), stamped, dim=1)
    where = T.max(T.where(marks, T.unsqueeze(T.arange(0, T.size(marks, 1)), 0), 0), 1, keepdim=True)
    last_stamp = T.gather(tokens, 1, where)  # [rows, 1]
    floor = T.where(T.gt(where, 0), T.add(last_stamp, T.where(half_pair, 0, 1)), first)
    scores = T.masked_fill(scores, T.logical_and(is_stamp, T.lt(vocab, floor)), _INF)

    # the first generated token: a timestamp, at most max_initial_timestamp_index in
    at_begin = T.full([1, 1], T.eq(cur_len, o.timestamps_from), dtype="bool")
    initial = T.logical_not(is_stamp)
    if o.max_initial_timestamp_index >= 0:
        initial = T.logical_or(initial, T.gt(vocab, first + o.max_initial_timestamp_index))
    scores = T.masked_fill(scores, T.logical_and(at_begin, initial), _INF)

    # a timestamp is forced when the timestamps together beat every text token
    logp = T.log_softmax(scores, -1)
    stamps = _logsumexp(T.slice(logp, 1, first, V))
    best_text = T.max(T.slice(logp, 1, 0, first), 1)
    force = T.unsqueeze(T.gt(stamps, best_text), 1)
    return T.masked_fill(scores, T.logical_and(force, T.logical_not(is_stamp)), _INF)


def constants(defaults: dict):
    """The rule's import-time constants from the checkpoint's generation_config, or None
    (the processor is left out) when it names no no_timestamps_token_id."""
    no_stamps = defaults.get("no_timestamps_token_id")
    if no_stamps is None:
        return None
    first_index = defaults.get("max_initial_timestamp_index")
    return {"timestamp_begin": int(no_stamps) + 1, "no_timestamps_token_id": int(no_stamps),
            "max_initial_timestamp_index": -1 if first_index is None else int(first_index)}


def resolve(get, defaults, ctx):
    """return_timestamps (the checkpoint's when not given) and where the generated tokens
    start (the decoder prompt's length: transformers' begin_index)."""
    on = T.if_none(get("return_timestamps"), bool(defaults.get("return_timestamps")))
    return {"return_timestamps": on, "timestamps_from": ctx.prompt_len}
