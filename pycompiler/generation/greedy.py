"""Greedy search and sampling (transformers' _sample): one row per sequence, a
while_loop of one token per row per step."""
from __future__ import annotations

from .. import ops as T
from ..control import cond, while_loop
from . import checks, end_tokens, final_tokens
from . import processors as P
from .branches import asked, best_token, draw_token, named, recorded

LOOP_STATE = ("seq", "unfinished", "cur_len", "cache", "mask", "scores", "raw", "pending")


def sample_search_function(s):
    """sample_search(states, mask, prompt, num_beams, num_return, length_penalty,
    early_stopping, *s.opts) over the Search `s` (context.py)."""
    OPTS = s.opts

    @named(*LOOP_STATE, *OPTS)
    def sample_continue(seq, unfinished, cur_len, cache, mask, scores, raw, pending, *opts):
        """Some row is unfinished and the length limit is not reached."""
        o = P.Options(OPTS, opts)
        return T.logical_and(T.any(unfinished), T.lt(cur_len, o.limit))

    @named(*LOOP_STATE, *OPTS)
    def sample_step(seq, unfinished, cur_len, cache, mask, scores, raw, pending, *opts):
        """One token per row: processors on the raw logits, then argmax (greedy) or a draw
        from softmax (sampling); finished rows get pad."""
        o = P.Options(OPTS, opts)
        logits = s.step_logits(pending, cache, seq, mask, cur_len)
        step = s.run_process(logits, seq, cur_len, 1, o)
        scores, raw = recorded(scores, raw, step, logits, o)
        nxt = cond(o.sample, draw_token, best_token, step, o.generator)
        nxt = T.where(unfinished, nxt, s.pad)
        seq = T.concat(seq, T.unsqueeze(nxt, 1), dim=1)
        ended = end_tokens.is_eos(o.eos, nxt)
        unfinished = T.logical_and(T.logical_and(unfinished, T.logical_not(ended)), final_tokens.emit_step(nxt))
        return (seq, unfinished, T.add(cur_len, 1), cache, mask, scores, raw, s.spent(pending)) + o.values()

    @named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS)
    def sample_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Greedy search, or sampling with num_return rows per sentence (their cache rows
        share the sentence's cross-attention K/V)."""
        o = P.Options(OPTS, opts)
        T.check(T.logical_or(o.sample, T.eq(num_return, 1)), checks.GREEDY_ONE_SEQUENCE)
        rows = T.mul(T.size(states, 0), num_return)
        cache = s.init_cache(states, rows, o.limit)
        mask = s.rows_mask(mask, num_return)
        seq = s.start_rows(prompt, num_return)
        prompt_len = T.size(seq, 1)
        cache, pending = s.start_prompt(cache, seq, mask, prompt_len)
        # a host's "stop" (docs/generation.md, "Streaming") finishes every row
        unfinished = T.logical_and(T.full([rows], True, dtype="bool"), final_tokens.emit_prompt(prompt))
        scores = T.zeros([0, rows, s.V])
        seq, unfinished, cur_len, cache, mask, scores, raw, _, *_ = while_loop(
            sample_continue, sample_step, seq, unfinished, prompt_len, cache, mask, scores, scores, pending,
            *o.values())
        return seq, None, asked(o.out_scores, scores), asked(o.out_logits, raw)

    return sample_search
