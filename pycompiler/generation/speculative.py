"""Speculative decoding inside the program: something proposes candidate tokens, the
model checks them all in one decoder pass, and the longest agreeing prefix plus the
model's own next token are kept (transformers' _assisted_decoding, batch 1).

    verify(s, cache, seq, cand, mask, cur_len, scores, raw, o)   the shared machinery
    speculative_search_function(s)                               the search around it

The proposers: prompt lookup (prompt_lookup op: the continuation of the row's last
n-gram found earlier in the row, transformers' PromptLookupCandidateGenerator) and a
draft model carried in the program (draft.py: its greedy continuation, k tokens, k fixed
or transformers' "heuristic" schedule). The draft's cache follows the row: it holds what
the draft has read, cut back after each pass to the tokens that stayed.

Sampling: with a draft, its candidates are drawn from its softmax q and kept by Leviathan
et al.'s rule (kept with probability min(1, p(x) / q(x)), else a draw from max(p - q, 0));
with prompt lookup (no q), a token is drawn from p at each verified position and the
candidate kept while it equals the draw. Either way each kept token is distributed as
the target's processed distribution p (tests/python/test_speculative_draft.py checks it).

The cache invariant of the loop: it holds positions [0, cur_len - 1); the row's last
token is not in it yet. A verify pass feeds that token and the c candidates at
positions [cur_len - 1, cur_len + c) with `decode_block` (one pass over every weight
for c + 1 positions), then picks a token per position exactly as a greedy (or sampling)
step would: the processors on that position's logits with the row as it would be
there, argmax (or a draw). Position i is picked only while the candidates before it
agreed with the picks, so every kept token is the one plain decoding would have
chosen from those logits. Then kv_truncate keeps [0, new cur_len - 1). Greedy with a
processor chain that acts at none of the block's lengths (chain.chain_idle) and no scores
asked for takes block_picks instead: the loop would take the argmax of each position's
unprocessed logits, so one argmax over the block and a cumulative sum give the same
tokens without a processor call per position (at small sizes a tensorvm step is
interpreter overhead, and the loop was most of a pass that kept many tokens).

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
from .branches import asked, keep_cache, named, recorded

# speculative_search's inputs after the search values: prompt lookup's N and n-gram size,
# whether the draft proposes, its k and schedule, and the source (the draft's encoder reads it)
SPEC_VALUES = ("lookup", "ngram", "draft_on", "k", "heuristic", "lookup_source", "source", "source_attention")
PICK_STATE = ("i", "chosen", "go", "scores", "raw", "logits", "full", "cur_len", "qs")
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
    def pick_continue(i, chosen, go, scores, raw, logits, full, cur_len, qs, *opts):
        return go

    @named(*PICK_STATE, *OPTS)
    def pick_next(i, chosen, go, scores, raw, logits, full, cur_len, qs, *opts):
        """Position cur_len - 1 + i: the processors see the row up to it, then argmax or a draw."""
        o = P.Options(OPTS, opts)
        step_logits = T.squeeze(T.slice(logits, 1, i, T.add(i, 1)), 1)
        length = T.add(cur_len, i)
        step = s.run_process(step_logits, T.slice(full, 1, 0, length), length, 1, o)
        scores, raw = recorded(scores, raw, step, step_logits, o)
        # the candidate at this position (none past the last: the slice is empty)
        candidate = T.slice(full, 1, length, T.add(length, 1))
        token = cond(o.sample, sampled_token, best_choice, step, o.generator, qs, i, candidate)
        chosen = T.concat(chosen, T.unsqueeze(token, 1), dim=1)
        agreed = T.any(T.eq(candidate, T.unsqueeze(token, 1)))
        go = T.logical_and(agreed, T.logical_not(T.any(end_tokens.is_eos(o.eos, token))))
        go = T.logical_and(go, T.lt(T.add(length, 1), o.limit))
        return (T.add(i, 1), chosen, go, scores, raw, logits, full, cur_len, qs) + o.values()

    return pick_continue, pick_next


def best_choice(step, generator, qs, i, candidate):
    return T.argmax(step, dim=-1)


def sampled_token(step, generator, qs, i, candidate):
    """Sampling: with the draft's probability of the candidate here (qs [1, c, V], drawn from
    it), Leviathan et al.'s rule; otherwise (prompt lookup, the bonus position) a draw from
    the processed distribution, the candidate kept when the draw equals it."""
    probs = T.softmax(step, -1)
    drafted = T.logical_and(T.gt(T.size(candidate, 1), 0), T.lt(i, T.size(qs, 1)))
    return cond(drafted, leviathan_token, plain_draw, probs, generator, qs, i, candidate)


def plain_draw(probs, generator, qs, i, candidate):
    return T.squeeze(T.multinomial(probs, generator, 1), 1)


def leviathan_token(probs, generator, qs, i, candidate):
    """The candidate x (drawn from q) kept with probability min(1, p(x) / q(x)); else a draw
    from max(p - q, 0) (normalized by the draw itself): the kept token is distributed as p."""
    q = T.squeeze(T.slice(qs, 1, i, T.add(i, 1)), 1)
    px, qx = T.gather(probs, 1, candidate), T.gather(q, 1, candidate)
    keep = T.any(T.lt(T.mul(T.rand(generator, [1, 1]), qx), px))
    return cond(keep, kept_candidate, residual_draw, probs, q, candidate, generator)


def kept_candidate(probs, q, candidate, generator):
    return T.reshape(candidate, [1])


def residual_draw(probs, q, candidate, generator):
    residual = T.maximum(T.sub(probs, q), 0.0)
    # all zero only where p == q up to rounding (then x was kept but for rounding): draw from p
    return T.squeeze(T.multinomial(cond(T.gt(T.item(T.sum(residual)), 0.0), pick_first, pick_second, residual, probs),
                                   generator, 1), 1)


def verify(s, pick, cache, seq, cand, mask, cur_len, scores, raw, o, qs):
    """One verify pass over the row's last token and the candidates cand [1, c]; returns
    (the kept tokens [1, n], 1 <= n <= c + 1, cache cut back to [0, cur_len - 1 + n),
    scores, raw)."""
    block_picks, loop_picks = pick
    pos = T.sub(cur_len, 1)
    block = T.concat(T.slice(seq, 1, pos, cur_len), cand, dim=1)
    logits = s.model.decode_block(cache, block, mask, pos)
    full = T.concat(seq, cand, dim=1)
    # greedy, no scores asked and a chain that changes nothing at these lengths: every
    # position's pick is its logits' argmax, so one argmax over the block picks them all
    # (the same tokens as the loop, without a processor call per position)
    lengths = T.arange(cur_len, T.add(T.add(cur_len, T.size(cand, 1)), 1))
    plain = T.logical_not(T.logical_or(T.logical_or(o.sample, o.out_scores), o.out_logits))
    fast = T.logical_and(plain, s.chain_idle(full, lengths, o))
    chosen, scores, raw = cond(fast, block_picks, loop_picks, logits, full, cur_len, scores, raw, qs, *o.values())
    cache = T.kv_truncate(cache, T.add(pos, T.size(chosen, 1)))
    return chosen, cache, scores, raw


def pick_branches(s):
    """verify's two ways to pick: the whole block at once (greedy, chain idle) or the
    per-position loop (pick_function)."""
    OPTS = s.opts
    loop = pick_function(s)
    args = ("logits", "full", "cur_len", "scores", "raw", "qs", *OPTS)

    @named(*args)
    def block_picks(logits, full, cur_len, scores, raw, qs, *opts):
        """The loop's tokens from one argmax: kept up to the first candidate that differs
        from its pick, the first end token, or max_length, whichever comes first."""
        o = P.Options(OPTS, opts)
        c = T.sub(T.size(logits, 1), 1)
        picks = T.argmax(logits, dim=-1)
        agree = T.eq(T.slice(full, 1, cur_len, T.add(cur_len, c)), T.slice(picks, 1, 0, c))
        n = T.add(_leading(T.logical_not(agree)), 1)
        n = T.minimum(n, T.add(_leading(end_tokens.is_eos(o.eos, picks)), 1))
        n = T.minimum(n, T.sub(o.limit, cur_len))
        return T.slice(picks, 1, 0, n), scores, raw

    @named(*args)
    def loop_picks(logits, full, cur_len, scores, raw, qs, *opts):
        o = P.Options(OPTS, opts)
        chosen = T.zeros([1, 0], dtype="i64")
        _, chosen, _, scores, raw, *_ = while_loop(*loop, 0, chosen, T.any(T.full([1], True, dtype="bool")),
                                                   scores, raw, logits, full, cur_len, qs, *o.values())
        return chosen, scores, raw

    return block_picks, loop_picks


def _leading(hits):
    """The number of positions of the bool [1, n] `hits` before its first true one."""
    return T.item(T.sum(T.cast(T.eq(T.cumsum(T.cast(hits, "i64"), 1), 0), "i64")))


def proposer_functions(s, draft):
    """The cond branches that propose candidates [1, c] (c <= num) and return the draft's
    cache and its filled length: prompt lookup (the draft state passes through) or the
    draft model (it first catches up on the row's tokens it has not seen, in one
    decode_block, then proposes greedily one token per pass)."""
    V = s.V
    args = ("seq", "cur_len", "num", "ngram", "eos", "dcache", "dmask", "dlen", "sample", "generator", "context")

    @named(*args)
    def lookup_candidates(seq, cur_len, num, ngram, eos, dcache, dmask, dlen, sample, generator, context):
        """`context` [1, m]: the source, searched before the row (prompt_lookup_source), or no tokens."""
        found = T.unsqueeze(T.prompt_lookup(T.reshape(T.concat(context, seq, dim=1), [-1]), ngram, num), 0)
        # a source token the decoder's vocabulary lacks ends the candidates, as an end token does
        found = T.slice(found, 1, 0, T.item(T.sum(T.cast(T.eq(T.cumsum(T.cast(T.ge(found, V), "i64"), 1), 0), "i64"))))
        return _before_first_eos(eos, found), dcache, dlen, T.zeros([1, 0, V])

    @named("logits", "qs", "generator")
    def draft_best(logits, qs, generator):
        return T.argmax(logits, dim=-1), qs

    @named("logits", "qs", "generator")
    def draft_drawn(logits, qs, generator):
        """Sampling: the candidate drawn from the draft's softmax, kept as q for the rule."""
        q = T.softmax(logits, -1)
        return T.squeeze(T.multinomial(q, generator, 1), 1), T.concat(qs, T.unsqueeze(q, 1), dim=1)

    draft_args = ("j", "cand", "qs", "num", "dcache", "dmask", "cur_len", "sample", "generator")

    @named(*draft_args)
    def draft_more(j, cand, qs, num, dcache, dmask, cur_len, sample, generator):
        return T.lt(j, num)

    @named(*draft_args)
    def draft_next(j, cand, qs, num, dcache, dmask, cur_len, sample, generator):
        """The draft's next candidate from its last one (at position cur_len + j - 1)."""
        last = T.slice(cand, 1, T.sub(j, 1), j)
        logits = T.squeeze(draft.decode_block(dcache, last, dmask, T.sub(T.add(cur_len, j), 1)), 1)
        token, qs = cond(sample, draft_drawn, draft_best, logits, qs, generator)
        return (T.add(j, 1), T.concat(cand, T.unsqueeze(token, 1), dim=1), qs, num, dcache, dmask, cur_len, sample,
                generator)

    @named(*args)
    def draft_candidates(seq, cur_len, num, ngram, eos, dcache, dmask, dlen, sample, generator, context):
        unseen = T.slice(seq, 1, dlen, cur_len)
        logits = T.squeeze(T.slice(draft.decode_block(dcache, unseen, dmask, dlen), 1, -1, None), 1)
        first, qs = cond(sample, draft_drawn, draft_best, logits, T.zeros([1, 0, V]), generator)
        _, cand, qs, *_ = while_loop(draft_more, draft_next, 1, T.unsqueeze(first, 1), qs, num, dcache, dmask,
                                     cur_len, sample, generator)
        return cand, dcache, T.sub(T.add(cur_len, num), 1), qs

    @named(*args, "draft_on")
    def candidates(seq, cur_len, num, ngram, eos, dcache, dmask, dlen, sample, generator, context, draft_on):
        return cond(draft_on, draft_candidates, lookup_candidates, seq, cur_len, num, ngram, eos, dcache, dmask,
                    dlen, sample, generator, context)

    @named(*args, "draft_on")
    def no_candidates(seq, cur_len, num, ngram, eos, dcache, dmask, dlen, sample, generator, context, draft_on):
        return T.zeros([1, 0], dtype="i64"), dcache, dlen, T.zeros([1, 0, V])

    def propose(seq, cur_len, num, ngram, eos, dcache, dmask, dlen, draft_on, context, o):
        return cond(T.gt(num, 0), candidates, no_candidates, seq, cur_len, num, ngram, eos, dcache, dmask, dlen,
                    o.sample, o.generator, context, draft_on)

    return propose


def draft_start_functions(s, draft):
    """cond branches: the draft's cache and mask (its own encoder over the source), or a
    one-slot placeholder cache when prompt lookup proposes."""
    @named("source", "source_attention", "mask", "limit")
    def start_draft(source, source_attention, mask, limit):
        if s.decoder_only:
            return draft.init_cache(1, limit), mask
        states = draft.encode(source, source_attention)
        return draft.init_cache(states, 1, limit), draft.source_mask(source_attention)

    @named("source", "source_attention", "mask", "limit")
    def no_draft(source, source_attention, mask, limit):
        dmask = mask if s.decoder_only else draft.source_mask(source_attention)
        return T.kv_cache(1, 1, 1, 1, 1), dmask

    return start_draft, no_draft


def next_k(k, heuristic, offered, kept):
    """transformers' num_assistant_tokens_schedule "heuristic": k + 2 when every candidate
    was accepted, else max(1, k - 1); "constant" keeps k."""
    grown = cond(T.eq(T.sub(kept, 1), offered), k_plus_two, k_minus_one, k)
    return cond(heuristic, pick_first, pick_second, grown, k)


def k_plus_two(k):
    return T.add(k, 2)


def k_minus_one(k):
    return T.maximum(T.sub(k, 1), 1)


def pick_first(a, b):
    return a


def pick_second(a, b):
    return b


def lookup_context(s, on, source):
    """What prompt lookup searches before the row: an encoder-decoder's source tokens with
    prompt_lookup_source=True (its first row: batch 1), else nothing (a decoder-only
    model's prompt is the row already; transformers searches the decoder row only)."""
    if s.decoder_only or s.first_input != "input_ids":
        T.check(T.logical_not(on), checks.LOOKUP_SOURCE_TOKENS)
        return T.zeros([1, 0], dtype="i64")
    return cond(on, pick_first, pick_second, T.slice(source, 0, 0, 1), T.zeros([1, 0], dtype="i64"))


def speculative_search_function(s, draft):
    """speculative_search(states, mask, prompt, num_beams, num_return, length_penalty,
    early_stopping, *s.opts, *SPEC_VALUES): greedy search or sampling, batch 1, with
    candidates from prompt lookup or from the draft model, verified in one pass each."""
    OPTS = s.opts
    pick = pick_branches(s)
    propose = proposer_functions(s, draft)
    start_draft, no_draft = draft_start_functions(s, draft)
    CARRIED = ("lookup", "ngram", "draft_on", "heuristic", "dmask", "context")

    @named(*LOOP_STATE, "dcache", "dlen", "k", *OPTS, *CARRIED)
    def spec_continue(seq, unfinished, cur_len, cache, mask, scores, raw, dcache, dlen, k, *rest):
        o = P.Options(OPTS, rest[:len(OPTS)])
        return T.logical_and(T.any(unfinished), T.lt(cur_len, o.limit))

    @named(*LOOP_STATE, "dcache", "dlen", "k", *OPTS, *CARRIED)
    def spec_step(seq, unfinished, cur_len, cache, mask, scores, raw, dcache, dlen, k, *rest):
        """Candidates, then one verify pass; the draft's cache cut back to what still agrees."""
        o = P.Options(OPTS, rest[:len(OPTS)])
        lookup, ngram, draft_on, heuristic, dmask, context = rest[len(OPTS):]
        # transformers' cap: the model adds one token after the candidates, within max_length
        room = T.sub(T.sub(o.limit, cur_len), 1)
        num = T.minimum(cond(draft_on, pick_first, pick_second, k, lookup), room)
        cand, dcache, dlen, qs = propose(seq, cur_len, num, ngram, o.eos, dcache, dmask, dlen, draft_on, context, o)
        new, cache, scores, raw = verify(s, pick, cache, seq, cand, mask, cur_len, scores, raw, o, qs)
        kept = T.size(new, 1)
        # the draft saw the row and its candidates up to dlen; what still agrees stays
        dlen = T.minimum(dlen, T.sub(T.add(cur_len, kept), 1))
        dcache = T.kv_truncate(dcache, T.minimum(dlen, T.kv_length(dcache)))
        k = next_k(k, heuristic, T.size(cand, 1), kept)
        seq = T.concat(seq, new, dim=1)
        ended = T.any(end_tokens.is_eos(o.eos, new))
        unfinished = T.logical_and(T.logical_and(unfinished, T.logical_not(ended)), final_tokens.emit_tokens(new))
        return (seq, unfinished, T.add(cur_len, kept), cache, mask, scores, raw, dcache, dlen, k) + rest

    @named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS,
           *SPEC_VALUES)
    def speculative_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *rest):
        """Greedy search or sampling with candidates from prompt lookup or the draft model,
        one sequence (batch 1, one beam, one return sequence: transformers' assisted
        generation refuses more)."""
        o = P.Options(OPTS, rest[:len(OPTS)])
        lookup, ngram, draft_on, k, heuristic, lookup_source, source, source_attention = rest[len(OPTS):]
        T.check(T.eq(T.size(prompt, 0), 1), checks.SPECULATIVE_BATCH)
        T.check(T.eq(num_beams, 1), checks.SPECULATIVE_BEAMS)
        T.check(T.eq(num_return, 1), checks.SPECULATIVE_RETURN)
        cache = s.init_cache(states, 1, o.limit)
        prompt_len = T.size(prompt, 1)
        # every prompt position but the last: the first verify pass feeds the last
        cache = cond(T.gt(prompt_len, 1), s._prefill_prompt, keep_cache, cache, prompt, mask)
        dcache, dmask = cond(draft_on, start_draft, no_draft, source, source_attention, mask, o.limit)
        unfinished = T.logical_and(T.full([1], True, dtype="bool"), final_tokens.emit_prompt(prompt))
        scores = T.zeros([0, 1, s.V])
        seq, unfinished, cur_len, cache, mask, scores, raw, *_ = while_loop(
            spec_continue, spec_step, prompt, unfinished, prompt_len, cache, mask, scores, scores, dcache, 0, k,
            *rest[:len(OPTS)], lookup, ngram, draft_on, heuristic, dmask, lookup_context(s, lookup_source, source))
        return seq, None, asked(o.out_scores, scores), asked(o.out_logits, raw)

    return speculative_search
