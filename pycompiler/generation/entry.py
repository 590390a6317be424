"""The program's `generate`: generate's inputs checked and resolved against the
checkpoint's defaults, then greedy search / sampling or beam search (a cond).

Each helper below adds its ops to `generate` while it is traced, in the order the
function runs them; bad inputs fail here, each with its own message, rather than
deep inside an op.
"""
from __future__ import annotations

from .. import ops as T
from ..control import cond
from . import checks, end_tokens
from . import processors as P
from .branches import named
from .speculative import SPEC_VALUES


def _source(s, input_ids, get):
    """(batch, attention_mask): the encoder's input (a decoder-only model's prompt) checked."""
    first_input, max_pos, what = s.first_input, s.model.max_positions, s.prompt_or_source
    T.check(T.gt(T.size(input_ids, 0), 0), checks.no_rows(first_input))
    batch = T.size(input_ids, 0)
    if first_input == "input_features":  # the model's encode checks the features' shape
        return batch, T.if_none(get("attention_mask"), T.full([batch, T.size(input_ids, -1)], 1, dtype="i64"))
    T.check(T.gt(T.size(input_ids, 1), 0), checks.no_tokens(what))
    T.check(T.le(T.size(input_ids, 1), max_pos), checks.too_long(what, max_pos))
    return batch, T.if_none(get("attention_mask"), T.full_like(input_ids, 1))


def _prompt(s, input_ids, get, batch):
    """(prompt, its input's name): a decoder-only model's input_ids, else
    decoder_input_ids or [batch, 1] of decoder_start_token_id."""
    if s.decoder_only:
        return input_ids, "input_ids"
    prompt = T.if_none(get("decoder_input_ids"), T.full([batch, 1], s.ids.decoder_start, dtype="i64"))
    T.check(T.eq(T.size(prompt, 0), batch), checks.prompt_rows(s.first_input))
    T.check(T.gt(T.size(prompt, 1), 0), checks.PROMPT_EMPTY)
    return prompt, "decoder_input_ids"


def _default_limit(s, prompt_len):
    """The checkpoint's max_length, else transformers' default (checks.py)."""
    if s.defaults["max_length"] is not None:
        return s.defaults["max_length"]
    return checks.default_max_length(prompt_len, s.model.max_positions, T.add, T.minimum)


def _length_limit(s, get, prompt_len, what):
    """The length limit, counting the prompt: max_new_tokens, the call's or else the
    checkpoint's, wins over max_length (transformers' _prepare_generated_length)."""
    max_pos = s.model.max_positions
    checkpoint_new = s.defaults.get("max_new_tokens")
    new = T.if_none(get("max_new_tokens"), -1 if checkpoint_new is None else checkpoint_new)
    T.check(T.logical_or(T.eq(new, -1), T.gt(new, 0)), checks.NEW_TOKENS_POSITIVE)
    limit = cond(T.gt(new, 0), P.length_from_new_tokens, P.length_as_given, new, prompt_len,
                 T.if_none(get("max_length"), _default_limit(s, prompt_len)))
    if not s.decoder_only:
        T.check(T.gt(limit, 1), checks.LIMIT_AT_LEAST_2)
    T.check(T.gt(limit, prompt_len), checks.limit_after_prompt(what))
    T.check(T.le(limit, max_pos), checks.past_positions(max_pos))
    return limit


def _search_shape(s, get):
    """(num_beams, num_return_sequences, length_penalty, early_stopping's index)."""
    defaults = s.defaults
    beams = T.if_none(get("num_beams"), defaults.get("num_beams", 1))
    T.check(T.ge(beams, 1), checks.at_least("num_beams", 1))
    num_return = T.if_none(get("num_return_sequences"), defaults.get("num_return_sequences", 1))
    T.check(T.ge(num_return, 1), checks.at_least("num_return_sequences", 1))
    penalty = T.add(T.if_none(get("length_penalty"), defaults.get("length_penalty", 1.0)), 0.0)
    T.check(T.eq(penalty, penalty), checks.must_be("length_penalty", checks.NOT_NAN))
    stopping = T.option_index(T.if_none(get("early_stopping"), defaults.get("early_stopping", False)), False,
                              True, "never", what="early_stopping")
    return beams, num_return, penalty, stopping


def _search_values(s, get, limit, prompt, prompt_len, attention_mask):
    """The values every search carries (context.SEARCH_VALUES, then the processors'
    run-time options), in that order: those before n_eos, the end tokens, those after."""
    defaults, ids = s.defaults, s.ids
    sample = T.if_none(get("do_sample"), defaults.get("do_sample", False))
    eos, eos_mask = end_tokens.resolve(get("eos_token_id"), ids)
    # transformers fills finished beams with `pad_token_id or eos_token_id[0]`
    fill = s.pad if s.pad else end_tokens.first(eos)
    values = {}
    ctx = P.Context(prompt_len=prompt_len, ids=ids, sample=sample, eos=eos_mask,
                    prompt_mask=attention_mask if s.decoder_only else T.full_like(prompt, 1))
    for p, _ in s.procs:
        if p.resolve is not None:
            values.update(p.resolve(get, defaults, ctx))
    chained = {p.name for p, _ in s.procs}
    for p in P.registry():  # a processor this checkpoint cannot run, asked for
        if p.name not in chained and p.asked is not None:
            T.check(T.logical_not(p.asked(get)), p.absent_message)
    out_scores = T.if_none(get("output_scores"), bool(defaults.get("output_scores")))
    out_logits = T.if_none(get("output_logits"), bool(defaults.get("output_logits")))
    generator = T.rng(T.if_none(get("seed"), 0))
    # the number of end tokens (n_eos) is taken where the cond's arguments are
    return (limit, sample, out_scores, out_logits, generator, eos_mask), eos, (fill, *(values[n] for n in s.proc_names))


def _model_states(s, input_ids, attention_mask, batch, limit, prompt_len):
    """(states, mask) the searches hand the model (context.py, "rows")."""
    if s.decoder_only:
        # every position a row may reach: the prompt's mask, then the tokens to come
        mask = T.concat(attention_mask, T.full([batch, T.sub(limit, prompt_len)], 1, dtype="i64"), dim=1)
        return mask, mask
    return s.model.encode(input_ids, attention_mask), s.model.source_mask(attention_mask)


def _speculation(s, get, draft_present):
    """speculative_search's values (speculative.SPEC_VALUES) but the source: prompt-lookup
    candidates per pass (-1 when off), the longest n-gram looked up, whether the draft
    proposes, its k, whether k follows the heuristic schedule."""
    default = s.defaults.get("prompt_lookup_num_tokens")
    lookup = T.if_none(get("prompt_lookup_num_tokens"), -1 if default is None else default)
    T.check(T.logical_or(T.eq(lookup, -1), T.gt(lookup, 0)), checks.LOOKUP_POSITIVE)
    # transformers: `max_matching_ngram_size or 2`
    ngram = T.if_none(get("max_matching_ngram_size"), s.defaults.get("max_matching_ngram_size") or 2)
    T.check(T.gt(ngram, 0), checks.NGRAM_POSITIVE)
    draft_on = T.if_none(get("use_draft"), False)
    T.check(T.logical_or(T.logical_not(draft_on), draft_present()), checks.NO_DRAFT)
    T.check(T.logical_not(T.logical_and(draft_on, T.gt(lookup, 0))), checks.DRAFT_OR_LOOKUP)
    k = T.if_none(get("num_assistant_tokens"), s.defaults.get("num_assistant_tokens") or 20)
    T.check(T.gt(k, 0), checks.at_least("num_assistant_tokens", 1))
    schedule = T.option_index(T.if_none(get("num_assistant_tokens_schedule"),
                                        s.defaults.get("num_assistant_tokens_schedule") or "constant"),
                              "constant", "heuristic", "heuristic_transient", what="num_assistant_tokens_schedule")
    return lookup, ngram, draft_on, k, T.gt(schedule, 0)


def generate_function(s, names, sample_search, beam_search, speculative=None):
    """Registers generate(<first input>, *names) with the ProgramBuilder of `s`;
    `speculative` (speculative.py's search and draft.py's stubs) runs when
    prompt_lookup_num_tokens or use_draft is given, else greedy search / sampling or
    beam search."""

    @named("states", "mask", "prompt", "num_beams", "num_return", "length_penalty", "early_stopping", *s.opts,
           *SPEC_VALUES)
    def plain_search(*args):
        """Beam search, or greedy search / sampling (speculation off)."""
        args = args[:-len(SPEC_VALUES)]
        return cond(T.gt(args[3], 1), beam_search, sample_search, *args)

    @s.pb.function(arg_types=["Tensor"] + ["Any"] * len(names))
    @named(s.first_input, *names)
    def generate(input_ids, *inputs):
        """transformers' generate() for this checkpoint: greedy search, sampling, beam
        search or beam sampling, with the logits processors, all inside the program.
        Every option is an input named as in transformers; None means the checkpoint's
        default (its generation_config). The prompt (a decoder-only model's input_ids,
        an encoder-decoder's decoder_input_ids [batch, p]) is prefilled in one pass.
        Returns (sequences, sequences_scores or None, per-step scores [steps, rows, V]
        or None)."""
        get = dict(zip(names, inputs)).__getitem__
        batch, attention_mask = _source(s, input_ids, get)
        prompt, what = _prompt(s, input_ids, get, batch)
        prompt_len = T.size(prompt, 1)
        limit = _length_limit(s, get, prompt_len, what)
        beams, num_return, penalty, stopping = _search_shape(s, get)
        head, eos, tail = _search_values(s, get, limit, prompt, prompt_len, attention_mask)
        states, mask = _model_states(s, input_ids, attention_mask, batch, limit, prompt_len)
        args = (states, mask, prompt, beams, num_return, penalty, stopping, *head, T.size(eos, 0), *tail)
        if speculative is None:
            T.check(T.eq(T.if_none(get("prompt_lookup_num_tokens"), -1), -1), checks.NO_DECODE_BLOCK)
            T.check(T.logical_not(T.if_none(get("use_draft"), False)), checks.NO_DECODE_BLOCK)
            return cond(T.gt(beams, 1), beam_search, sample_search, *args)
        search, draft = speculative
        spec = _speculation(s, get, draft.present)
        on = T.logical_or(T.gt(spec[0], 0), spec[2])
        return cond(on, search, plain_search, *args, *spec, input_ids, attention_mask)

    return generate
