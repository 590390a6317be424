"""The program side of streaming: which tokens a search step makes final, emitted on
the "tokens" channel (docs/generation.md, "Streaming"; the host side is streaming.py).

Traced into search.py's loops (beam_step_tokens as a program function of its own,
final_beam_tokens). Greedy search and sampling choose one final
token per row and step. Beam search streams per sentence only what no later step can
change: the prefix shared by every hypothesis that can still be returned, which is
every live beam and every finished hypothesis now in the sentence's heap (later
hypotheses descend from a live beam; a finished one that left the heap never comes
back). Once a sentence can no longer improve, its best finished hypothesis is final
and streams to its end; when the loop ends, the rest of each sentence's best
hypothesis follows, so a sentence's stream is its best returned sequence.
"""
from __future__ import annotations

from .. import ops as T
from ..control import emit

PROMPT = "prompt"
TOKENS = "tokens"


def emit_prompt(seq):
    """Hands the rows' prompts ([rows, len]) to the host; returns its continue/stop answer."""
    return emit(PROMPT, seq)


def emit_step(next_tokens):
    """Greedy search and sampling: the step's token per row ([rows] -> [rows, 1])."""
    return emit(TOKENS, T.unsqueeze(next_tokens, 1))


def emit_tokens(tokens):
    """Speculative decoding: the step's kept tokens of the one row, [1, n]."""
    return emit(TOKENS, tokens)


def agreed_length(ref, rows, valid):
    """Per sentence, how many leading positions every valid row of `rows` [B, R, L]
    shares with `ref` [B, L] (`valid` [B, R] bool): [B] int64."""
    same = T.logical_or(T.eq(rows, T.unsqueeze(ref, 1)), T.unsqueeze(T.logical_not(valid), 2))
    breaks = T.cumsum(T.cast(T.logical_not(T.all(same, 1)), "i64"), 1)  # 0 up to the first disagreement
    return T.sum(T.cast(T.eq(breaks, 0), "i64"), 1)


def new_tokens(ref, final_len, streamed):
    """The tokens of `ref` [B, L] at positions streamed .. final_len - 1 per sentence,
    as [B, n] padded with -1, and the new count of positions handed out [B]. Counts
    are positions from the start of the row, the prompt included (it went out first,
    on the prompt channel)."""
    target = T.maximum(final_len, streamed)
    count = T.sub(target, streamed)
    j = T.unsqueeze(T.arange(0, T.item(T.max(count))), 0)
    index = T.add(T.unsqueeze(streamed, 1), j)
    tokens = T.gather(ref, 1, T.minimum(index, T.sub(T.size(ref, 1), 1)))
    return T.where(T.lt(j, T.unsqueeze(count, 1)), tokens, -1), target


def beam_step_tokens(running, done_seq, done, done_len, improvable, streamed, batch, beams):
    """Beam search after a step: the tokens that became final ([B, n], -1 padded) and
    the new streamed counts. `running` [B*K, L] are the live beams, `done_seq` [B, K, L]
    the finished heap (valid where `done`), best first, `done_len` the position of each
    finished hypothesis's last token, `improvable` [B, 1] whether a live beam can still
    beat the heap (when not, the heap's best is final)."""
    width = T.size(done_seq, 2)
    live = T.reshape(running, [batch, beams, width])
    lead = T.squeeze(T.slice(live, 1, 0, 1), 1)
    candidates = T.concat(live, done_seq, dim=1)
    valid = T.concat(T.full([batch, beams], True, dtype="bool"), done, dim=1)
    shared = agreed_length(lead, candidates, valid)
    best, best_len = best_finished(done_seq, done_len)
    decided = T.logical_not(T.squeeze(improvable, 1))
    ref = T.where(T.unsqueeze(decided, 1), best, lead)
    return new_tokens(ref, T.where(decided, best_len, shared), streamed)


def best_finished(done_seq, done_len):
    """Each sentence's best finished hypothesis [B, L] and its length [B] (through its last token)."""
    best = T.squeeze(T.slice(done_seq, 1, 0, 1), 1)
    return best, T.add(T.squeeze(T.slice(done_len, 1, 0, 1), 1), 1)


def emit_beam_rest(done_seq, done_len, streamed):
    """After the loop: the rest of each sentence's best hypothesis."""
    best, best_len = best_finished(done_seq, done_len)
    tokens, _ = new_tokens(best, best_len, streamed)
    return emit(TOKENS, tokens)
