"""Beam search and beam sampling (transformers' _beam_search, vectorized over
[batch, beams]): K running beams per sentence and K finished slots, a while_loop of
one step for every beam."""
from __future__ import annotations

from .. import ops as T
from ..control import cond, emit, while_loop
from . import checks, end_tokens, final_tokens
from . import processors as P
from .branches import asked, best_candidates, first, named, recorded, sampled_candidates, second

NEG = -1.0e9  # transformers' "very large negative" for beams that must not be chosen

BEAM_STATE = ("running", "running_scores", "done_seq", "done_scores", "done", "done_len", "improvable",
              "all_hit", "cur_len", "cache", "mask", "scores", "length_penalty", "early_stopping", "prompt_len",
              "streamed", "go", "raw", "pending")


def _candidates(s, o, running, running_scores, cur_len, cache, mask, scores, raw, pending):
    """The step's 2K candidates of K*V (transformers keeps max(2, 1 + number of end
    tokens) x K, so that K can run on even when the best ones all end; the filters keep
    one more than them): their scores, beams, tokens and sequences [B, 2K, cur_len + 1]."""
    B, K = T.size(running_scores, 0), T.size(running_scores, 1)
    K2 = T.mul(K, T.maximum(2, T.add(o.n_eos, 1)))
    logits = s.step_logits(pending, cache, running, mask, cur_len)
    logp, process_options = s.banned_in_log_softmax(logits, o)
    step = s.run_process(logp, running, cur_len, T.add(o.n_eos, 1), process_options)
    scores, raw = recorded(scores, raw, step, logits, o)
    acc = T.add(T.reshape(step, [B, K, s.V]), T.unsqueeze(running_scores, 2))
    top, top_index = cond(o.sample, sampled_candidates, best_candidates, T.reshape(acc, [B, T.mul(K, s.V)]), K2,
                          o.generator)
    beam, token = T.floordiv(top_index, s.V), T.remainder(top_index, s.V)
    history = T.gather(T.reshape(running, [B, K, cur_len]), 1, T.expand(T.unsqueeze(beam, 2), [B, K2, cur_len]))
    candidates = T.concat(history, T.unsqueeze(token, 2), dim=2)
    return B, K, K2, scores, raw, top, beam, token, candidates


def _finished(o, hits, top, candidates, done_seq, done_scores, done, done_len, improvable, cur_len, new_len,
              prompt_len, length_penalty, early_stopping, B, K, K2):
    """The finished slots: the top K candidates that hit, penalized by their generated length."""
    entered = T.logical_and(hits, T.lt(T.arange(0, K2), K))
    final = T.div(top, T.pow(T.sub(new_len, prompt_len), length_penalty))
    full = T.logical_and(T.all(done, 1, keepdim=True), T.eq(early_stopping, 1))
    final = T.add(final, T.mul(T.cast(full, "f32"), NEG))
    final = T.add(final, T.mul(T.cast(T.logical_not(improvable), "f32"), NEG))
    final = T.add(final, T.mul(T.cast(T.logical_not(entered), "f32"), NEG))
    merged_seq = T.concat(T.concat(done_seq, T.full([B, K, 1], o.fill, dtype="i64"), dim=2), candidates, dim=1)
    merged_scores = T.concat(done_scores, final, dim=1)
    _, best = T.topk(merged_scores, K)
    done_seq = T.gather(merged_seq, 1, T.expand(T.unsqueeze(best, 2), [B, K, new_len]))
    done_scores = T.gather(merged_scores, 1, best)
    done = T.gather(T.concat(done, entered, dim=1), 1, best)
    done_len = T.gather(T.concat(done_len, T.full([B, K2], cur_len, dtype="i64"), dim=1), 1, best)
    return done_seq, done_scores, done, done_len


def _still_improvable(o, improvable, running_scores, done, done_scores, new_len, prompt_len, length_penalty,
                      early_stopping):
    """Can a running beam still beat the worst finished one? (sticky per sentence)"""
    never = T.logical_and(T.eq(early_stopping, 2), T.gt(length_penalty, 0.0))
    best_len = T.sub(cond(never, first, second, o.limit, new_len), prompt_len)
    best_running = T.div(T.slice(running_scores, 1, 0, 1), T.pow(best_len, length_penalty))
    worst_done = T.where(done, T.min(done_scores, 1, keepdim=True), NEG)
    return T.logical_and(improvable, T.any(T.gt(best_running, worst_done), -1, keepdim=True))


def _beam_loop(s):
    """beam_continue and beam_step, the while_loop's functions."""
    OPTS = s.opts
    # its own function, so that profiles show what streaming costs a beam step
    final_beam_tokens = s.pb.function(final_tokens.beam_step_tokens, arg_types=["Tensor"] * 6 + ["int", "int"],
                                      name="final_beam_tokens")

    @named(*BEAM_STATE, *OPTS)
    def beam_continue(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                      cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw, pending,
                      *opts):
        """Some sentence can still improve, early_stopping=True has not filled every
        sentence, and some candidate of the last step did not hit a stopping criterion."""
        full = T.logical_and(T.all(done), T.eq(early_stopping, 1))
        return T.logical_and(T.logical_and(T.any(improvable), T.logical_not(full)), T.logical_not(all_hit))

    @named(*BEAM_STATE, *OPTS)
    def beam_step(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                  cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw, pending, *opts):
        """One step for every beam: log_softmax, processors, add the beam scores, keep the
        top 2K of K*V candidates, the best K that did not finish run on (their cache rows
        reordered), the top K that finished enter the K finished slots."""
        o = P.Options(OPTS, opts)
        B, K, K2, scores, raw, top, beam, token, candidates = _candidates(
            s, o, running, running_scores, cur_len, cache, mask, scores, raw, pending)
        new_len = T.add(cur_len, 1)
        # a host's "stop" ends the search as max_length does: every candidate finishes
        hits = T.logical_or(T.logical_or(end_tokens.is_eos(o.eos, token), T.ge(new_len, o.limit)), T.logical_not(go))
        # the running beams: the best K candidates that did not hit
        live = T.add(top, T.mul(T.cast(hits, "f32"), NEG))
        _, keep = T.topk(live, K)
        running_scores = T.gather(live, 1, keep)
        running = T.reshape(T.gather(candidates, 1, T.expand(T.unsqueeze(keep, 2), [B, K, new_len])), [T.mul(B, K),
                                                                                                        new_len])
        done_seq, done_scores, done, done_len = _finished(
            o, hits, top, candidates, done_seq, done_scores, done, done_len, improvable, cur_len, new_len, prompt_len,
            length_penalty, early_stopping, B, K, K2)
        # row b*K + k of the cache continues the beam its new token extends
        origin = T.add(T.gather(beam, 1, keep), T.mul(T.unsqueeze(T.arange(0, B), 1), K))
        cache = s.model.reorder(cache, T.reshape(origin, [T.mul(B, K)]))
        improvable = _still_improvable(o, improvable, running_scores, done, done_scores, new_len, prompt_len,
                                       length_penalty, early_stopping)
        tokens, streamed = final_beam_tokens(running, done_seq, done, done_len, improvable, streamed, B, K)
        go = T.logical_and(go, emit(final_tokens.TOKENS, tokens))
        return (running, running_scores, done_seq, done_scores, done, done_len, improvable, T.all(hits), new_len,
                cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw,
                s.spent(pending)) + o.values()

    return beam_continue, beam_step


def beam_search_function(s):
    """beam_search(states, mask, prompt, num_beams, num_return, length_penalty,
    early_stopping, *s.opts) over the Search `s` (context.py)."""
    OPTS = s.opts
    beam_continue, beam_step = _beam_loop(s)

    @named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS)
    def beam_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Beam search (or beam sampling) with K = num_beams rows per sentence; returns the
        num_return best finished hypotheses per sentence, best first, and their scores."""
        o = P.Options(OPTS, opts)
        T.check(T.le(num_return, num_beams), checks.RETURN_AT_MOST_BEAMS)
        B, K = T.size(states, 0), num_beams
        cache = s.init_cache(states, T.mul(B, K), o.limit)
        mask = s.rows_mask(mask, K)
        running = s.start_rows(prompt, K)
        prompt_len = T.size(running, 1)
        cache, pending = s.start_prompt(cache, running, mask, prompt_len)
        running_scores = T.expand(T.where(T.gt(T.arange(0, K), 0), NEG, 0.0), [B, K])
        done_seq = T.full([B, K, prompt_len], o.fill, dtype="i64")
        done_scores = T.full([B, K], NEG)
        done = T.full([B, K], False, dtype="bool")
        done_len = T.full([B, K], 0, dtype="i64")
        improvable = T.full([B, 1], True, dtype="bool")
        all_hit = T.any(T.full([1], False, dtype="bool"))
        scores = T.zeros([0, T.mul(B, K), s.V])
        go = final_tokens.emit_prompt(prompt)
        out = while_loop(beam_continue, beam_step, running, running_scores, done_seq, done_scores, done, done_len,
                         improvable, all_hit, prompt_len, cache, mask, scores, length_penalty, early_stopping,
                         prompt_len, T.full([B], prompt_len, dtype="i64"), go, scores, pending, *o.values())
        done_seq, done_scores, done_len, scores, streamed, raw = out[2], out[3], out[5], out[11], out[15], out[17]
        final_tokens.emit_beam_rest(done_seq, done_len, streamed)
        width = T.add(T.item(T.max(T.slice(done_len, 1, 0, num_return))), 1)
        rows = T.mul(B, num_return)
        seq = T.reshape(T.slice(T.slice(done_seq, 1, 0, num_return), 2, 0, width), [rows, width])
        seq_scores = T.reshape(T.slice(done_scores, 1, 0, num_return), [rows])
        return seq, seq_scores, asked(o.out_scores, scores), asked(o.out_logits, raw)

    return beam_search
