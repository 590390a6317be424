"""Speculative decoding inside the program: something proposes candidate tokens, the
model checks them all in one decoder pass, and the longest agreeing prefix plus the
model's own next token are kept (transformers' _assisted_decoding, batch 1).

    verify(s, cache, seq, cand, mask, cur_len, scores, raw, o)   the shared machinery
    speculative_search_function(s)                               the search around it

The proposers: prompt lookup (prompt_lookup op: the continuation of the row's last
n-gram found earlier in the row, transformers' PromptLookupCandidateGenerator).

The cache invariant of the loop: it holds positions [0, cur_len - 1); the row's last
token is not in it yet. A verify pass feeds that token and the c candidates at
positions [cur_len - 1, cur_len + c) with `decode_block` (one pass over every weight
for c + 1 positions), then picks a token per position exactly as a greedy (or sampling)
step would: the processors on that position's logits with the row as it would be
there, argmax (or a draw). Position i is picked only while the candidates before it
agreed with the picks, so every kept token is the one plain decoding would have
chosen from those logits. Then kv_truncate keeps [0, new cur_len - 1).

Exactness: the logits of a c + 1 position pass are sums in another order than a
one-position step's (the linears block rows, the attention reads a causal mask), so
they may differ in the last bits; where two tokens tie that closely the pick may
differ from plain greedy's, as in transformers (docs/generation.md).
"""
from __future__ import annotations

from .. import ops as T
from ..control import cond, while_loop
from . import checks, end_tokens, final_tokens
from . import processors as P
from .branches import asked, best_token, draw_token, keep_cache, named, recorded

SPEC_VALUES = ("lookup", "ngram")
PICK_STATE = ("i", "chosen", "go", "scores", "raw", "logits", "full", "cur_len")
LOOP_STATE = ("seq", "unfinished", "cur_len", "cache", "mask", "scores", "raw")


def _before_first_eos(eos, tokens):
    """The tokens [1, n] before the first end token (transformers' prompt lookup drops an
    end token and what follows from its candidates)."""
    hits = T.cumsum(T.cast(end_tokens.is_eos(eos, tokens), "i64"), 1)
    return T.slice(tokens, 1, 0, T.item(T.sum(T.cast(T.eq(hits, 0), "i64"))))


def pick_function(s):
    """The while_loop that picks a token per verified position (module docstring)."""
    OPTS = s.opts

    @named(*PICK_STATE, *OPTS)
    def pick_continue(i, chosen, go, scores, raw, logits, full, cur_len, *opts):
        return go

    @named(*PICK_STATE, *OPTS)
    def pick_next(i, chosen, go, scores, raw, logits, full, cur_len, *opts):
        """Position cur_len - 1 + i: the processors see the row up to it, then argmax or a draw."""
        o = P.Options(OPTS, opts)
        step_logits = T.squeeze(T.slice(logits, 1, i, T.add(i, 1)), 1)
        length = T.add(cur_len, i)
        step = s.run_process(step_logits, T.slice(full, 1, 0, length), length, 1, o)
        scores, raw = recorded(scores, raw, step, step_logits, o)
        token = cond(o.sample, draw_token, best_token, step, o.generator)
        chosen = T.concat(chosen, T.unsqueeze(token, 1), dim=1)
        # the candidate at this position (none past the last: the slice is empty)
        agreed = T.any(T.eq(T.slice(full, 1, length, T.add(length, 1)), T.unsqueeze(token, 1)))
        go = T.logical_and(agreed, T.logical_not(T.any(end_tokens.is_eos(o.eos, token))))
        go = T.logical_and(go, T.lt(T.add(length, 1), o.limit))
        return (T.add(i, 1), chosen, go, scores, raw, logits, full, cur_len) + o.values()

    return pick_continue, pick_next


def verify(s, pick, cache, seq, cand, mask, cur_len, scores, raw, o):
    """One verify pass over the row's last token and the candidates cand [1, c]; returns
    (the kept tokens [1, n], 1 <= n <= c + 1, cache cut back to [0, cur_len - 1 + n),
    scores, raw)."""
    pos = T.sub(cur_len, 1)
    block = T.concat(T.slice(seq, 1, pos, cur_len), cand, dim=1)
    logits = s.model.decode_block(cache, block, mask, pos)
    full = T.concat(seq, cand, dim=1)
    chosen = T.zeros([1, 0], dtype="i64")
    _, chosen, _, scores, raw, *_ = while_loop(*pick, 0, chosen, T.any(T.full([1], True, dtype="bool")), scores, raw, logits, full, cur_len,
                                               *o.values())
    cache = T.kv_truncate(cache, T.add(pos, T.size(chosen, 1)))
    return chosen, cache, scores, raw


def speculative_search_function(s):
    """speculative_search(states, mask, prompt, num_beams, num_return, length_penalty,
    early_stopping, *s.opts, lookup, ngram): greedy search or sampling, batch 1, with
    prompt-lookup candidates verified `lookup` at a time."""
    OPTS = s.opts
    pick = pick_function(s)

    @named(*LOOP_STATE, *OPTS, *SPEC_VALUES)
    def spec_continue(seq, unfinished, cur_len, cache, mask, scores, raw, *rest):
        o = P.Options(OPTS, rest[:len(OPTS)])
        return T.logical_and(T.any(unfinished), T.lt(cur_len, o.limit))

    @named(*LOOP_STATE, *OPTS, *SPEC_VALUES)
    def spec_step(seq, unfinished, cur_len, cache, mask, scores, raw, *rest):
        """Candidates from the row itself, then one verify pass."""
        o = P.Options(OPTS, rest[:len(OPTS)])
        lookup, ngram = rest[len(OPTS):]
        # transformers' cap: the model adds one token after the candidates, within max_length
        room = T.sub(T.sub(o.limit, cur_len), 1)
        found = T.prompt_lookup(T.reshape(seq, [-1]), ngram, T.minimum(lookup, room))
        cand = _before_first_eos(o.eos, T.unsqueeze(found, 0))
        new, cache, scores, raw = verify(s, pick, cache, seq, cand, mask, cur_len, scores, raw, o)
        seq = T.concat(seq, new, dim=1)
        ended = T.any(end_tokens.is_eos(o.eos, new))
        unfinished = T.logical_and(T.logical_and(unfinished, T.logical_not(ended)), final_tokens.emit_tokens(new))
        return (seq, unfinished, T.add(cur_len, T.size(new, 1)), cache, mask, scores, raw) + rest

    @named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS,
           *SPEC_VALUES)
    def speculative_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *rest):
        """Greedy search or sampling with prompt-lookup candidates, one sequence (batch 1,
        one beam, one return sequence: transformers' assisted generation refuses more)."""
        o = P.Options(OPTS, rest[:len(OPTS)])
        T.check(T.eq(T.size(prompt, 0), 1), checks.SPECULATIVE_BATCH)
        T.check(T.eq(num_beams, 1), checks.SPECULATIVE_BEAMS)
        T.check(T.eq(num_return, 1), checks.SPECULATIVE_RETURN)
        cache = s.init_cache(states, 1, o.limit)
        prompt_len = T.size(prompt, 1)
        # every prompt position but the last: the first verify pass feeds the last
        cache = cond(T.gt(prompt_len, 1), s._prefill_prompt, keep_cache, cache, prompt, mask)
        unfinished = T.logical_and(T.full([1], True, dtype="bool"), final_tokens.emit_prompt(prompt))
        scores = T.zeros([0, 1, s.V])
        seq, unfinished, cur_len, cache, mask, scores, raw, *_ = while_loop(
            spec_continue, spec_step, prompt, unfinished, prompt_len, cache, mask, scores, scores, *rest)
        return seq, None, asked(o.out_scores, scores), asked(o.out_logits, raw)

    return speculative_search
