"""transformers' generate() written once as program functions over a model interface.

    build_generation(pb, model, defaults) adds `generate` and its search functions to
    the ProgramBuilder `pb`, around the model's functions (model.py).

generate(input_ids, attention_mask, <options>, decoder_input_ids) runs greedy
search, sampling, beam search or beam sampling inside the program, with the
processor chain of processors.py; every option is an input named as in
transformers, None meaning the checkpoint's default (`defaults`, by transformers'
names). A decoder prompt ([batch, p], starting with decoder_start_token_id) is run
through the decoder in one prefill pass (positions 0..p-2; the last prompt token is
the first decode step), then decoding continues. A model with prefill_logits (the
decoder-only ones) runs the whole prompt in that pass and hands the first step the
last position's logits (`pending`), so the first token costs no decode step. See
docs/generation.md.
"""
from __future__ import annotations

import inspect

from .. import ops as T
from ..control import cond, emit, while_loop
from . import end_tokens, final_tokens
from . import processors as P
from .inputs import NO_DEFAULT, Input, bool_input, choice_input, float_input, int_input, seed_input
from .model import DecoderOnly, EncoderDecoder

NEG = -1.0e9  # transformers' "very large negative" for beams that must not be chosen

# The search's own generate inputs, before and after the processors' inputs.
SEARCH_HEAD = (
    int_input("max_length", 1, "length limit counting the decoder prompt", None),
    int_input("max_new_tokens", 1, "new tokens (max_length = prompt length + max_new_tokens; the call's or the "
              "checkpoint's wins over max_length)", None),
    int_input("num_beams", 1, "1: greedy search or sampling; > 1: beam search or beam sampling", 1),
    bool_input("do_sample", "sample instead of taking the best", False),
    int_input("num_return_sequences", 1, "rows per input", 1),
    float_input("length_penalty", doc="finished beam score = sum of log-probs / generated_length ** length_penalty",
                default=1.0),
    choice_input("early_stopping", (True, False, "never"), "when a sentence's beam search is done", False),
)
SEARCH_TAIL = (
    bool_input("output_scores", "also return the per-step scores", False),
    seed_input("seed"),
    bool_input("output_logits", "also return the per-step raw logits", False),
    end_tokens.EOS_INPUT,
)
PROMPT = Input("decoder_input_ids", lambda v, meta: v, "the decoder prompt [batch, p]")
# Values the search carries besides the processors' options.
SEARCH_VALUES = ("limit", "sample", "out_scores", "out_logits", "generator", "eos", "n_eos", "fill")


def generate_inputs(decoder_only: bool = False) -> tuple:
    """generate's inputs after input_ids and attention_mask, in order (Input objects);
    a decoder-only model's prompt is input_ids itself, so it has no decoder_input_ids."""
    return (*SEARCH_HEAD, *P.runtime_inputs(), *SEARCH_TAIL, *(() if decoder_only else (PROMPT,)))


def generation_config_defaults() -> dict:
    """transformers' global default of every generate input that is a generation_config
    field (the importer reads the checkpoint's value of each)."""
    return {i.name: i.default for i in generate_inputs() if i.default is not NO_DEFAULT}


def input_names(decoder_only: bool = False) -> tuple:
    """generate's parameter names after input_ids."""
    return ("attention_mask", *(i.name for i in generate_inputs(decoder_only)))


def _named(*names):
    """Gives a `*args` function these parameter names, so the traced IR function reads
    `def beam_step(running, ..., top_p, ...)` rather than `arg_0, arg_1, ...`."""
    def deco(fn):
        def f(*args):
            return fn(*args)

        f.__name__ = f.__qualname__ = fn.__name__
        f.__doc__ = fn.__doc__
        f.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        return f
    return deco


# Small branch functions of cond (each becomes one IR function per signature).

def first(a, b):
    return a


def second(a, b):
    return b


def append_step(scores, step):
    """Per-step scores for output_scores: [steps, rows, V] grows by one step."""
    return T.concat(scores, T.unsqueeze(step, 0), dim=0)


def record_step(scores, raw, step, logits, out_scores, out_logits):
    """output_scores / output_logits: the step's processed scores and raw logits
    appended to those asked for."""
    return cond(out_scores, append_step, first, scores, step), cond(out_logits, append_step, first, raw, logits)


def keep_steps(scores, raw, step, logits, out_scores, out_logits):
    return scores, raw


def recorded(scores, raw, step, logits, o):
    """One cond per step when neither output is asked for (the usual case)."""
    return cond(T.logical_or(o.out_scores, o.out_logits), record_step, keep_steps, scores, raw, step, logits,
                o.out_scores, o.out_logits)


def best_token(scores, generator):
    return T.argmax(scores, dim=-1)


def draw_token(scores, generator):
    return T.squeeze(T.multinomial(T.softmax(scores, -1), generator, 1), 1)


def best_candidates(acc, k, generator):
    """The k best of the [batch, beams * V] accumulated log-probs (torch.topk)."""
    return T.topk(acc, k)


def sampled_candidates(acc, k, generator):
    """Beam sampling: k candidates drawn without replacement from softmax(acc)."""
    idx = T.multinomial(T.softmax(acc, -1), generator, k)
    return T.gather(acc, 1, idx), idx


def keep_cache(cache, tokens, mask):
    return cache


def _chain_functions(pb, procs, ids):
    """The `process` program function: the processor chain over one step's scores."""
    names = P.carried_options(procs)
    warp = [(p, c) for p, c in procs if p.stage == "warp"]
    warp_names = P.carried_options(warp)

    def branch(p, consts):
        """p.fn as a cond branch: (scores, *state, *its run-time options)."""
        @_named("scores", *P.STATE_FIELDS, *p.options)
        def fn(scores, *args):
            n = len(P.STATE_FIELDS)
            state = P.State(*args[:n], ids=ids)
            o = P.Options((*consts, *p.options), (*consts.values(), *args[n:]))
            return p.fn(scores, state, o)
        fn.__name__ = fn.__qualname__ = p.fn.__name__
        return fn

    branches = {p.name: branch(p, c) for p, c in procs}

    def apply(scores, state_args, o, stage_procs):
        state = P.State(*state_args, ids=ids)
        for p, consts in stage_procs:
            mine = o.subset(p.options)
            if p.when is None:
                scores = branches[p.name](scores, *state_args, *mine.values())
                continue
            full = P.Options((*consts, *p.options), (*consts.values(), *mine.values()))
            scores = cond(p.when(state, full), branches[p.name], P.unchanged, scores, *state_args, *mine.values())
        return scores

    @_named("scores", *P.STATE_FIELDS, *warp_names)
    def warp_chain(scores, *args):
        """The sampling warpers, in transformers' order."""
        n = len(P.STATE_FIELDS)
        return apply(scores, args[:n], P.Options(warp_names, args[n:]), warp)

    @pb.function(arg_types=["Tensor", "Tensor", "int", "int"] + ["Any"] * (len(P.STATE_FIELDS) - 3 + len(names)))
    @_named("scores", *P.STATE_FIELDS, *names)
    def process(scores, *args):
        """transformers' logits processors in its order (processors.py), the sampling
        warpers only when sampling, renormalization last."""
        n = len(P.STATE_FIELDS)
        state_args, o = args[:n], P.Options(names, args[n:])
        scores = apply(scores, state_args, o, [(p, c) for p, c in procs if p.stage == "logits"])
        if warp:
            sample = state_args[P.STATE_FIELDS.index("sample")]
            scores = cond(sample, warp_chain, P.unchanged, scores, *state_args, *o.subset(warp_names).values())
        return apply(scores, state_args, o, [(p, c) for p, c in procs if p.stage == "last"])

    return process


def build_generation(pb, model, defaults: dict):
    """Adds generate(input_ids, attention_mask, ..., decoder_input_ids) to `pb` for
    `model` (an EncoderDecoder). `defaults`: the checkpoint's generation defaults by
    transformers' names (generation_config over transformers' global defaults)."""
    if not isinstance(model, (EncoderDecoder, DecoderOnly)):
        raise TypeError(f"build_generation: model must be an EncoderDecoder or a DecoderOnly, "
                        f"got {type(model).__name__}")
    decoder_only = isinstance(model, DecoderOnly)
    defaults = {**generation_config_defaults(), **defaults}
    ids = model.ids
    V, pad, start = ids.vocab_size, ids.pad, ids.decoder_start
    procs = P.chain(defaults)
    proc_names = P.carried_options(procs)
    OPTS = (*SEARCH_VALUES, *proc_names)
    process = _chain_functions(pb, procs, ids)

    def run_process(scores, seq, cur_len, min_keep, o):
        return process(scores, seq, cur_len, min_keep, o.limit, o.sample, o.eos, *o.subset(proc_names).values())

    def banned_in_log_softmax(logits, o):
        """Beam search's log_softmax with the one-token bad words set to -inf in the same
        pass (log_softmax_masked), and the options that then skip the processor's own pass
        over the scores: it runs only for longer bad words. Equal to transformers' order
        (bad words after log_softmax and the earlier processors), since -inf stays -inf
        through every processor, except after a +inf sequence_bias: with sequence_bias
        on, the processor bans as before."""
        if "bad_words_banned" not in proc_names:
            return T.log_softmax(logits, -1), o
        biased = o.sequence_bias_on if "sequence_bias_on" in proc_names else False
        early = T.logical_and(o.bad_words_banned, T.logical_not(biased))
        on = T.logical_or(o.bad_words_multi_on, T.logical_and(biased, o.bad_words_on))
        return T.log_softmax_masked(logits, early), o.replace(bad_words_on=on)

    @_named("cache", "tokens", "mask")
    def prefill_prompt(cache, tokens, mask):
        """All prompt positions but the last in one pass (the last is the first step)."""
        return model.prefill(cache, T.slice(tokens, 1, 0, T.sub(T.size(tokens, 1), 1)), mask)

    prefill_logits = getattr(model, "prefill_logits", None)

    def start_prompt(cache, tokens, mask, prompt_len):
        """Prefills the prompt; returns the cache and the first step's logits when the
        model gives them (prefill_logits: the whole prompt in one pass), else [0, V]
        (the first step runs the last prompt token)."""
        if prefill_logits is not None:
            return cache, prefill_logits(cache, tokens, mask)
        return cond(T.gt(prompt_len, 1), prefill_prompt, keep_cache, cache, tokens, mask), T.zeros([0, V])

    @_named("pending", "cache", "tokens", "mask", "position")
    def prefilled_logits(pending, cache, tokens, mask, position):
        return pending

    @_named("pending", "cache", "tokens", "mask", "position")
    def decoded_logits(pending, cache, tokens, mask, position):
        return model.decode_step(cache, tokens, mask, position)

    def step_logits(pending, cache, seq, mask, cur_len):
        """The step's logits: the prefill's for the first step when it gave them (rows
        of `pending`), else a decode step over the last token."""
        pos = T.sub(cur_len, 1)
        tokens = T.slice(seq, 1, pos, cur_len)
        if prefill_logits is None:
            return model.decode_step(cache, tokens, mask, pos)
        return cond(T.gt(T.size(pending, 0), 0), prefilled_logits, decoded_logits, pending, cache, tokens, mask, pos)

    def spent(pending):
        """`pending` after the first step: no rows (new, so that no view keeps the
        prefill's logits alive through the loop)."""
        return pending if prefill_logits is None else T.zeros([0, V])

    def start_rows(prompt, per_sentence):
        """The prompt of each sentence repeated for its rows (sentence-major)."""
        return T.repeat_interleave(prompt, per_sentence, 0)

    # What the search hands the model besides tokens and the cache. An encoder-decoder
    # gets its encoder states and source mask, one per sentence. A decoder-only model
    # gets the attention mask over every position up to the length limit, [batch,
    # limit] (the prompt's mask, then ones), as `states`; each row gets its sentence's.
    if decoder_only:
        def init_cache(states, rows, max_len):
            return model.init_cache(rows, max_len)

        def rows_mask(mask, per_sentence):
            return T.repeat_interleave(mask, per_sentence, 0)
    else:
        init_cache = model.init_cache

        def rows_mask(mask, per_sentence):
            return mask

    # ---- greedy search and sampling (transformers' _sample): one row per sequence

    @_named("seq", "unfinished", "cur_len", "cache", "mask", "scores", "raw", "pending", *OPTS)
    def sample_continue(seq, unfinished, cur_len, cache, mask, scores, raw, pending, *opts):
        """Some row is unfinished and the length limit is not reached."""
        o = P.Options(OPTS, opts)
        return T.logical_and(T.any(unfinished), T.lt(cur_len, o.limit))

    @_named("seq", "unfinished", "cur_len", "cache", "mask", "scores", "raw", "pending", *OPTS)
    def sample_step(seq, unfinished, cur_len, cache, mask, scores, raw, pending, *opts):
        """One token per row: processors on the raw logits, then argmax (greedy) or a draw
        from softmax (sampling); finished rows get pad."""
        o = P.Options(OPTS, opts)
        logits = step_logits(pending, cache, seq, mask, cur_len)
        step = run_process(logits, seq, cur_len, 1, o)
        scores, raw = recorded(scores, raw, step, logits, o)
        nxt = cond(o.sample, draw_token, best_token, step, o.generator)
        nxt = T.where(unfinished, nxt, pad)
        seq = T.concat(seq, T.unsqueeze(nxt, 1), dim=1)
        ended = end_tokens.is_eos(o.eos, nxt)
        unfinished = T.logical_and(T.logical_and(unfinished, T.logical_not(ended)), final_tokens.emit_step(nxt))
        return (seq, unfinished, T.add(cur_len, 1), cache, mask, scores, raw, spent(pending)) + o.values()

    @_named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS)
    def sample_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Greedy search, or sampling with num_return rows per sentence (their cache rows
        share the sentence's cross-attention K/V)."""
        o = P.Options(OPTS, opts)
        T.check(T.logical_or(o.sample, T.eq(num_return, 1)), "generate: greedy search (num_beams=1, do_sample=False) "
                "returns one sequence per input: num_return_sequences must be 1")
        rows = T.mul(T.size(states, 0), num_return)
        cache = init_cache(states, rows, o.limit)
        mask = rows_mask(mask, num_return)
        seq = start_rows(prompt, num_return)
        prompt_len = T.size(seq, 1)
        cache, pending = start_prompt(cache, seq, mask, prompt_len)
        # a host's "stop" (docs/generation.md, "Streaming") finishes every row
        unfinished = T.logical_and(T.full([rows], True, dtype="bool"), final_tokens.emit_prompt(prompt))
        scores = T.zeros([0, rows, V])
        seq, unfinished, cur_len, cache, mask, scores, raw, _, *_ = while_loop(
            sample_continue, sample_step, seq, unfinished, prompt_len, cache, mask, scores, scores, pending,
            *o.values())
        return seq, None, cond(o.out_scores, first, second, scores, None), cond(o.out_logits, first, second, raw, None)

    # ---- beam search (transformers' _beam_search, vectorized over [batch, beams])

    BEAM_STATE = ("running", "running_scores", "done_seq", "done_scores", "done", "done_len", "improvable",
                  "all_hit", "cur_len", "cache", "mask", "scores", "length_penalty", "early_stopping", "prompt_len",
                  "streamed", "go", "raw", "pending")

    # its own function, so that profiles show what streaming costs a beam step
    final_beam_tokens = pb.function(final_tokens.beam_step_tokens, arg_types=["Tensor"] * 6 + ["int", "int"],
                                    name="final_beam_tokens")

    @_named(*BEAM_STATE, *OPTS)
    def beam_continue(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                      cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw, pending,
                      *opts):
        """Some sentence can still improve, early_stopping=True has not filled every
        sentence, and some candidate of the last step did not hit a stopping criterion."""
        full = T.logical_and(T.all(done), T.eq(early_stopping, 1))
        return T.logical_and(T.logical_and(T.any(improvable), T.logical_not(full)), T.logical_not(all_hit))

    @_named(*BEAM_STATE, *OPTS)
    def beam_step(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                  cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw, pending, *opts):
        """One step for every beam: log_softmax, processors, add the beam scores, keep the
        top 2K of K*V candidates, the best K that did not finish run on (their cache rows
        reordered), the top K that finished enter the K finished slots."""
        o = P.Options(OPTS, opts)
        B, K = T.size(running_scores, 0), T.size(running_scores, 1)
        # transformers keeps max(2, 1 + number of end tokens) x K candidates, so that K
        # can run on even when the best ones all end; the filters keep one more than them
        K2 = T.mul(K, T.maximum(2, T.add(o.n_eos, 1)))
        logits = step_logits(pending, cache, running, mask, cur_len)
        logp, process_options = banned_in_log_softmax(logits, o)
        step = run_process(logp, running, cur_len, T.add(o.n_eos, 1), process_options)
        scores, raw = recorded(scores, raw, step, logits, o)
        acc = T.add(T.reshape(step, [B, K, V]), T.unsqueeze(running_scores, 2))
        top, top_index = cond(o.sample, sampled_candidates, best_candidates, T.reshape(acc, [B, T.mul(K, V)]), K2,
                              o.generator)
        beam, token = T.floordiv(top_index, V), T.remainder(top_index, V)
        history = T.gather(T.reshape(running, [B, K, cur_len]), 1, T.expand(T.unsqueeze(beam, 2), [B, K2, cur_len]))
        candidates = T.concat(history, T.unsqueeze(token, 2), dim=2)  # [B, 2K, cur_len + 1]
        new_len = T.add(cur_len, 1)
        # a host's "stop" ends the search as max_length does: every candidate finishes
        hits = T.logical_or(T.logical_or(end_tokens.is_eos(o.eos, token), T.ge(new_len, o.limit)), T.logical_not(go))
        # the running beams: the best K candidates that did not hit
        live = T.add(top, T.mul(T.cast(hits, "f32"), NEG))
        _, keep = T.topk(live, K)
        running_scores = T.gather(live, 1, keep)
        running = T.reshape(T.gather(candidates, 1, T.expand(T.unsqueeze(keep, 2), [B, K, new_len])), [T.mul(B, K),
                                                                                                        new_len])
        # the finished slots: the top K candidates that hit, penalized by their generated length
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
        # row b*K + k of the cache continues the beam its new token extends
        origin = T.add(T.gather(beam, 1, keep), T.mul(T.unsqueeze(T.arange(0, B), 1), K))
        cache = model.reorder(cache, T.reshape(origin, [T.mul(B, K)]))
        # can a running beam still beat the worst finished one? (sticky per sentence)
        never = T.logical_and(T.eq(early_stopping, 2), T.gt(length_penalty, 0.0))
        best_len = T.sub(cond(never, first, second, o.limit, new_len), prompt_len)
        best_running = T.div(T.slice(running_scores, 1, 0, 1), T.pow(best_len, length_penalty))
        worst_done = T.where(done, T.min(done_scores, 1, keepdim=True), NEG)
        improvable = T.logical_and(improvable, T.any(T.gt(best_running, worst_done), -1, keepdim=True))
        tokens, streamed = final_beam_tokens(running, done_seq, done, done_len, improvable, streamed, B, K)
        go = T.logical_and(go, emit(final_tokens.TOKENS, tokens))
        return (running, running_scores, done_seq, done_scores, done, done_len, improvable, T.all(hits), new_len,
                cache, mask, scores, length_penalty, early_stopping, prompt_len, streamed, go, raw,
                spent(pending)) + o.values()

    @_named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *OPTS)
    def beam_search(states, mask, prompt, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Beam search (or beam sampling) with K = num_beams rows per sentence; returns the
        num_return best finished hypotheses per sentence, best first, and their scores."""
        o = P.Options(OPTS, opts)
        T.check(T.le(num_return, num_beams), "generate: num_return_sequences must be at most num_beams")
        B, K = T.size(states, 0), num_beams
        cache = init_cache(states, T.mul(B, K), o.limit)
        mask = rows_mask(mask, K)
        running = start_rows(prompt, K)
        prompt_len = T.size(running, 1)
        cache, pending = start_prompt(cache, running, mask, prompt_len)
        running_scores = T.expand(T.where(T.gt(T.arange(0, K), 0), NEG, 0.0), [B, K])
        done_seq = T.full([B, K, prompt_len], o.fill, dtype="i64")
        done_scores = T.full([B, K], NEG)
        done = T.full([B, K], False, dtype="bool")
        done_len = T.full([B, K], 0, dtype="i64")
        improvable = T.full([B, 1], True, dtype="bool")
        all_hit = T.any(T.full([1], False, dtype="bool"))
        scores = T.zeros([0, T.mul(B, K), V])
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
        return seq, seq_scores, cond(o.out_scores, first, second, scores, None), cond(o.out_logits, first, second, raw,
                                                                                      None)

    # ---- options and the entry point

    names = input_names(decoder_only)
    max_pos = model.max_positions
    first_input = "input_ids" if decoder_only else model.encoder_input
    features = first_input == "input_features"

    def default_limit(prompt_len):
        """transformers' max_length when neither the call nor the checkpoint sets one:
        20 tokens after the prompt, within the position table."""
        if defaults["max_length"] is not None:
            return defaults["max_length"]
        return T.minimum(T.add(prompt_len, 20), max_pos)

    @pb.function(arg_types=["Tensor"] + ["Any"] * len(names))
    @_named(first_input, *names)
    def generate(input_ids, *inputs):
        """transformers' generate() for this checkpoint: greedy search, sampling, beam
        search or beam sampling, with the logits processors, all inside the program.
        Every option is an input named as in transformers; None means the checkpoint's
        default (its generation_config). The prompt (a decoder-only model's input_ids,
        an encoder-decoder's decoder_input_ids [batch, p]) is prefilled in one pass.
        Returns (sequences, sequences_scores or None, per-step scores [steps, rows, V]
        or None)."""
        given = dict(zip(names, inputs))
        get = given.__getitem__
        # Bad inputs fail here, each with its own message, rather than deep inside an op.
        T.check(T.gt(T.size(input_ids, 0), 0), f"generate: {first_input} has no rows (an empty batch)")
        batch = T.size(input_ids, 0)
        if features:  # the model's encode checks the features' shape
            attention_mask = T.if_none(get("attention_mask"),
                                       T.full([batch, T.size(input_ids, -1)], 1, dtype="i64"))
        else:
            T.check(T.gt(T.size(input_ids, 1), 0), "generate: input_ids has no tokens (a zero-length "
                    f"{'prompt' if decoder_only else 'source'})")
            T.check(T.le(T.size(input_ids, 1), max_pos),
                    f"generate: the {'prompt' if decoder_only else 'source'} is longer than max_position_embeddings "
                    f"({max_pos})")
            attention_mask = T.if_none(get("attention_mask"), T.full_like(input_ids, 1))
        if decoder_only:
            prompt, what = input_ids, "input_ids"
        else:
            prompt, what = T.if_none(get("decoder_input_ids"), T.full([batch, 1], start, dtype="i64")), \
                "decoder_input_ids"
            T.check(T.eq(T.size(prompt, 0), batch), f"generate: decoder_input_ids must have one row per {first_input} row")
            T.check(T.gt(T.size(prompt, 1), 0), "generate: decoder_input_ids has no tokens")
        prompt_len = T.size(prompt, 1)
        # lengths count the prompt; max_new_tokens, the call's or else the checkpoint's,
        # wins over max_length (transformers' _prepare_generated_length)
        checkpoint_new = defaults.get("max_new_tokens")
        new = T.if_none(get("max_new_tokens"), -1 if checkpoint_new is None else checkpoint_new)
        T.check(T.logical_or(T.eq(new, -1), T.gt(new, 0)), "generate: max_new_tokens must be greater than 0")
        limit = cond(T.gt(new, 0), P.length_from_new_tokens, P.length_as_given, new, prompt_len,
                     T.if_none(get("max_length"), default_limit(prompt_len)))
        if not decoder_only:
            T.check(T.gt(limit, 1), "generate: max_length must be at least 2 (it counts the decoder start token)")
        T.check(T.gt(limit, prompt_len), f"generate: max_length must be greater than the length of {what}")
        T.check(T.le(limit, max_pos),
                f"generate: max_length (or max_new_tokens + prompt) is past max_position_embeddings ({max_pos})")
        beams = T.if_none(get("num_beams"), defaults.get("num_beams", 1))
        T.check(T.ge(beams, 1), "generate: num_beams must be at least 1")
        num_return = T.if_none(get("num_return_sequences"), defaults.get("num_return_sequences", 1))
        T.check(T.ge(num_return, 1), "generate: num_return_sequences must be at least 1")
        penalty = T.add(T.if_none(get("length_penalty"), defaults.get("length_penalty", 1.0)), 0.0)
        T.check(T.eq(penalty, penalty), "generate: length_penalty must be a number, not NaN")
        stopping = T.option_index(T.if_none(get("early_stopping"), defaults.get("early_stopping", False)), False,
                                  True, "never", what="early_stopping")
        sample = T.if_none(get("do_sample"), defaults.get("do_sample", False))
        eos, eos_mask = end_tokens.resolve(get("eos_token_id"), ids)
        # transformers fills finished beams with `pad_token_id or eos_token_id[0]`
        fill = pad if pad else end_tokens.first(eos)
        values = {}
        ctx = P.Context(prompt_len=prompt_len, ids=ids, sample=sample, eos=eos_mask,
                        prompt_mask=attention_mask if decoder_only else T.full_like(prompt, 1))
        for p, _ in procs:
            if p.resolve is not None:
                values.update(p.resolve(get, defaults, ctx))
        out_scores = T.if_none(get("output_scores"), bool(defaults.get("output_scores")))
        out_logits = T.if_none(get("output_logits"), bool(defaults.get("output_logits")))
        generator = T.rng(T.if_none(get("seed"), 0))
        if decoder_only:
            # every position a row may reach: the prompt's mask, then the tokens to come
            mask = T.concat(attention_mask, T.full([batch, T.sub(limit, prompt_len)], 1, dtype="i64"), dim=1)
            states = mask
        else:
            states = model.encode(input_ids, attention_mask)
            mask = model.source_mask(attention_mask)
        return cond(T.gt(beams, 1), beam_search, sample_search, states, mask, prompt, beams, num_return, penalty,
                    stopping, limit, sample, out_scores, out_logits, generator, eos_mask, T.size(eos, 0), fill,
                    *(values[n] for n in proc_names))

    return generate
