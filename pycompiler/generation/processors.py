"""Logits processors as a chain, each one function with one signature.

    fn(scores, state, o) -> scores

`scores` is the step's [rows, vocab] scores, `state` the search's view of the step
(State: seq, cur_len, min_keep, limit, sample, eos, ids) and `o` the processor's own
options by name (o.repetition_penalty, ...). A processor is registered once with
`register(Processor(...))`: the generate keywords it reads (`inputs`), how the
program turns them into its options (`resolve`, traced inside `generate`, where
None falls back to the checkpoint's default), when it acts (`when`, a traced
predicate; off costs one comparison per step), and where it sits in the chain
(`stage`). The program's generate inputs, the Python wrapper's accepted keywords
and the importer's list of supported generation_config fields all come from this
registry, as llama.cpp builds its sampler chain from `llama_sampler_i` entries.

The chain runs in transformers' order (`_get_logits_processor`): the "logits"
processors in registration order, then the "warp" processors when sampling, then
the "last" ones (renormalize_logits).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .. import ops as T
from ..control import cond, while_loop
from . import sequence_bias as SB
from . import timestamps as TS
from .end_tokens import vocabulary
from .inputs import (bool_input, float_input, int_input, sequence_bias_input, token_input, token_list_input,
                     token_sequences_input)
from .model import TokenIds

STAGES = ("logits", "warp", "last")
# The search values every processor sees, in the order they are passed.
STATE_FIELDS = ("seq", "cur_len", "min_keep", "limit", "sample", "eos")


@dataclass(frozen=True)
class State:
    """The step a processor acts on: seq [rows, cur_len] (int64, the prompt and the
    tokens so far), cur_len, min_keep (tokens a filter must keep: 1, or for beam
    sampling one more than the end tokens), limit (max_length), sample (do_sample),
    eos (the call's end tokens as a bool [vocab] mask: the model's, or generate's
    eos_token_id) and the model's token ids (Python ints, known at import)."""
    seq: Any
    cur_len: Any
    min_keep: Any
    limit: Any
    sample: Any
    eos: Any
    ids: TokenIds


class Options:
    """Named values (o.top_k); `names` fixes the order they are carried in."""

    def __init__(self, names, values):
        values = tuple(values)
        if len(names) != len(values):
            raise TypeError(f"expected {len(names)} options ({', '.join(names)}), got {len(values)}")
        self._names = tuple(names)
        self._values = dict(zip(names, values))

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"no option {name!r} (options: {', '.join(self._names)})") from None

    def values(self) -> tuple:
        return tuple(self._values[n] for n in self._names)

    def subset(self, names) -> "Options":
        return Options(names, [self._values[n] for n in names])

    def replace(self, **values) -> "Options":
        """The same options with some values replaced (names must exist)."""
        for n in values:
            if n not in self._values:
                raise AttributeError(f"no option {n!r} (options: {', '.join(self._names)})")
        return Options(self._names, [values.get(n, self._values[n]) for n in self._names])


@dataclass(frozen=True)
class Processor:
    """One entry of the chain (see the module doc).

    inputs: generate keywords read at run time (program inputs).
    options: the names resolve returns; they are carried through the search loop.
    resolve(get, defaults, ctx) -> {option: traced value}: get(name) is the raw input
        (maybe None), defaults the checkpoint's generation defaults by transformers'
        names, ctx a Context (prompt_len, ids). Checks go here, as T.check.
    when(state, o) -> traced bool, or None to act at every step.
    constants(defaults) -> {name: Python value} or None: options fixed at import
        from the checkpoint's generation_config (listed in `import_fields`); None
        leaves the processor out of the chain.
    """
    name: str
    fn: Callable
    inputs: tuple = ()
    options: tuple = ()
    resolve: Optional[Callable] = None
    when: Optional[Callable] = None
    stage: str = "logits"
    import_fields: tuple = ()
    constants: Optional[Callable] = None
    doc: str = ""
    # (get) -> traced bool: the call asks for this processor; checked false (with
    # `absent_message`) in a program whose chain leaves it out (constants gave None)
    asked: Optional[Callable] = None
    absent_message: str = ""


@dataclass(frozen=True)
class Context:
    """What resolve may need besides the inputs: the decoder prompt length (lengths
    count it), the model's token ids, do_sample (resolved), the call's end tokens
    (a bool [vocab] mask, as State.eos) and the prompt's attention mask [batch, p]
    (a decoder-only model's attention_mask; ones for an encoder-decoder, whose
    decoder prompt generate takes without a mask)."""
    prompt_len: Any
    ids: TokenIds
    sample: Any
    eos: Any = None
    prompt_mask: Any = None


_REGISTRY: list = []


def register(p: Processor) -> Processor:
    """Adds a processor to the chain of every program built afterwards."""
    if p.stage not in STAGES:
        raise ValueError(f"processor {p.name}: stage must be one of {STAGES}, got {p.stage!r}")
    if any(q.name == p.name for q in _REGISTRY):
        raise ValueError(f"processor {p.name} is registered twice")
    taken = {n for q in _REGISTRY for n in (*q.options, *(i.name for i in q.inputs))}
    clash = [n for n in (*p.options, *(i.name for i in p.inputs)) if n in taken]
    if clash:
        raise ValueError(f"processor {p.name}: {clash} already belong to another processor")
    if p.fn.__name__ in {i.name for q in (*_REGISTRY, p) for i in q.inputs}:
        raise ValueError(f"processor {p.name}: its function may not be named as a generate input")
    _REGISTRY.append(p)
    return p


def registry() -> tuple:
    return tuple(_REGISTRY)


def runtime_inputs() -> tuple:
    """Every processor's generate inputs, in registration order."""
    return tuple(i for p in _REGISTRY for i in p.inputs)


def import_fields() -> tuple:
    """generation_config fields the processors read at import."""
    return tuple(f for p in _REGISTRY for f in p.import_fields)


def chain(defaults: dict) -> list:
    """The processors of a program with these generation defaults, in chain order,
    each with its import-time constants ({} for run-time processors)."""
    out = []
    for stage in STAGES:
        for p in _REGISTRY:
            if p.stage != stage:
                continue
            consts = p.constants(defaults) if p.constants is not None else {}
            if consts is None:
                continue
            out.append((p, consts))
    return out


def carried_options(procs) -> tuple:
    """The run-time option names of a chain, in the order the search carries them."""
    return tuple(n for p, _ in procs for n in p.options)


# ---------------------------------------------------------------- helpers

def unchanged(scores, *rest):
    return scores


def ban_tokens(scores, banned):
    """banned: a bool [vocab] mask (or anything broadcasting to scores)."""
    return T.masked_fill(scores, banned, -math.inf)


def force_token(scores, token):
    """Every score -inf but `token`'s, which is 0 (forced BOS / EOS)."""
    return T.where(T.eq(T.arange(0, T.size(scores, 1)), token), 0.0, T.full_like(scores, -math.inf))


def _plain(name: str, default_of: Callable, check: Optional[Callable] = None, message: str = "", as_float=False):
    """resolve for an option that is its input, or the checkpoint's default."""
    def resolve(get, defaults, ctx):
        v = T.if_none(get(name), default_of(defaults))
        if as_float:
            v = T.add(v, 0.0)
        if check is not None:
            T.check(check(v), message)
        return {name: v}
    return resolve


# ---------------------------------------------------------------- the processors

def penalize_repeats(scores, state, o):
    """RepetitionPenaltyLogitsProcessor: tokens already in the row are divided by the
    penalty when positive, multiplied when negative. A row's left padding is not
    penalized (transformers' prompt_ignore_length): its positions are pointed at the
    row's last token instead, which is penalized anyway, so the gather and scatter keep
    their [rows, cur_len] shape and a duplicate writes the same value."""
    seq = state.seq
    ignore = o.repetition_ignore  # [batch]: each sentence's leading padding
    ignore = T.repeat_interleave(ignore, T.floordiv(T.size(seq, 0), T.size(ignore, 0)), 0)
    last = T.slice(seq, 1, T.sub(state.cur_len, 1), state.cur_len)
    padding = T.lt(T.unsqueeze(T.arange(0, T.size(seq, 1)), 0), T.unsqueeze(ignore, 1))
    index = T.where(padding, last, seq)
    seen = T.gather(scores, 1, index)
    rep = o.repetition_penalty
    seen = T.where(T.lt(seen, 0.0), T.mul(seen, rep), T.div(seen, rep))
    return T.scatter(scores, 1, index, seen)


_repetition_value = _plain("repetition_penalty", lambda d: d.get("repetition_penalty", 1.0), lambda v: T.gt(v, 0.0),
                           "generate: repetition_penalty must be > 0", as_float=True)


def _repetition_penalty(get, defaults, ctx):
    # transformers builds the processor with prompt_ignore_length = the index of the
    # first non-zero of the prompt's attention mask (argmax: 0 for an all-zero row)
    ignore = T.argmax(T.cast(T.ne(ctx.prompt_mask, 0), "i64"), 1)
    return {**_repetition_value(get, defaults, ctx), "repetition_ignore": ignore}


def ngram_match(j, match, seq, n, windows, cur_len):
    return T.lt(j, T.sub(n, 1))


def ngram_compare(j, match, seq, n, windows, cur_len):
    """Window i's j-th token against the j-th token of the last n-1 tokens."""
    ith = T.slice(seq, 1, j, T.add(j, windows))
    at = T.add(T.sub(cur_len, T.sub(n, 1)), j)
    match = T.logical_and(match, T.eq(ith, T.slice(seq, 1, at, T.add(at, 1))))
    return T.add(j, 1), match, seq, n, windows, cur_len


def ban_ngrams(scores, state, o):
    """NoRepeatNGramLogitsProcessor: a token that would complete an n-gram already in
    the row is banned. Window i is seq[:, i:i+n]; it bans its last token when its
    first n-1 tokens equal the row's last n-1 tokens."""
    seq, cur_len, n = state.seq, state.cur_len, o.no_repeat_ngram_size
    rows, V = T.size(scores, 0), T.size(scores, 1)
    windows = T.add(T.sub(cur_len, n), 1)
    match = T.full([rows, windows], True, dtype="bool")
    _, match, _, _, _, _ = while_loop(ngram_match, ngram_compare, 0, match, seq, n, windows, cur_len)
    last = T.slice(seq, 1, T.sub(n, 1), T.add(T.sub(n, 1), windows))
    banned = T.scatter(T.full([rows, T.add(V, 1)], False, dtype="bool"), 1, T.where(match, last, V), True)
    return T.masked_fill(scores, T.slice(banned, 1, 0, V), -math.inf)


def ban_eos(scores, state, o):
    """MinLengthLogitsProcessor: every end token is -inf while the row is shorter than min_length."""
    return ban_tokens(scores, state.eos)


def force_bos(scores, state, o):
    """ForcedBOSTokenLogitsProcessor."""
    return force_token(scores, o.forced_bos_token_id)


def force_eos(scores, state, o):
    """ForcedEOSTokenLogitsProcessor: the token at max_length - 1."""
    return force_token(scores, o.forced_eos_token_id)


def suppress(scores, state, o):
    """SuppressTokensLogitsProcessor: a [vocab] bool mask made once per call."""
    return ban_tokens(scores, o.suppress_tokens)


def divide_by_temperature(scores, state, o):
    """TemperatureLogitsWarper."""
    return T.div(scores, o.temperature)


def top_k_filter(scores, state, o):
    """TopKLogitsWarper: scores below the k-th best become -inf."""
    k = T.minimum(T.maximum(o.top_k, state.min_keep), T.size(scores, 1))
    best, _ = T.topk(scores, k)
    return T.masked_fill(scores, T.lt(scores, T.slice(best, 1, T.sub(k, 1), k)), -math.inf)


def top_p_filter(scores, state, o):
    """TopPLogitsWarper: sort ascending, drop the tokens whose cumulative probability is
    at most 1 - top_p, but keep the min_keep most likely."""
    V = T.size(scores, 1)
    desc, order = T.topk(scores, V)
    rev = T.arange(T.sub(V, 1), -1, -1)
    asc, asc_order = T.index_select(desc, 1, rev), T.index_select(order, 1, rev)
    cum = T.cumsum(T.softmax(asc, -1), 1)
    drop = T.logical_and(T.le(cum, T.sub(1.0, o.top_p)), T.lt(T.arange(0, V), T.sub(V, state.min_keep)))
    drop = T.scatter(T.full_like(scores, False, dtype="bool"), 1, asc_order, drop)
    return T.masked_fill(scores, drop, -math.inf)


def min_p_filter(scores, state, o):
    """MinPLogitsWarper: drop tokens less likely than min_p times the best one's
    probability, but keep the min_keep most likely."""
    probs = T.softmax(scores, -1)
    drop = T.lt(probs, T.mul(T.max(probs, -1, keepdim=True), o.min_p))
    _, best = T.topk(probs, T.minimum(state.min_keep, T.size(scores, 1)))
    return T.masked_fill(scores, T.scatter(drop, 1, best, False), -math.inf)


def typical_filter(scores, state, o):
    """TypicalLogitsWarper: keep the tokens whose surprisal is closest to the entropy,
    up to typical_p of the mass (and at least min_keep)."""
    V = T.size(scores, 1)
    logp = T.log_softmax(scores, -1)
    p = T.exp(logp)
    # the entropy, with 0 * -inf taken as 0 (torch's nansum)
    ent = T.neg(T.sum(T.where(T.gt(p, 0.0), T.mul(logp, p), 0.0), -1, keepdim=True))
    shifted = T.abs(T.sub(T.neg(logp), ent))
    neg_sorted, order = T.topk(T.neg(shifted), V)  # ascending surprisal distance
    sorted_shift = T.neg(neg_sorted)
    cum = T.cumsum(T.softmax(T.gather(scores, 1, order), -1), 1)
    last = T.minimum(T.sum(T.cast(T.lt(cum, o.typical_p), "i64"), -1, keepdim=True), T.sub(V, 1))
    drop = T.logical_and(T.gt(sorted_shift, T.gather(sorted_shift, 1, last)),
                         T.ge(T.arange(0, V), state.min_keep))
    drop = T.scatter(T.full_like(scores, False, dtype="bool"), 1, order, drop)
    return T.masked_fill(scores, drop, -math.inf)


def epsilon_filter(scores, state, o):
    """EpsilonLogitsWarper: drop tokens with probability below epsilon_cutoff, but keep
    the min_keep most likely."""
    k = T.minimum(state.min_keep, T.size(scores, 1))
    best, _ = T.topk(scores, k)
    drop = T.logical_and(T.lt(T.softmax(scores, -1), o.epsilon_cutoff),
                         T.lt(scores, T.slice(best, 1, T.sub(k, 1), k)))
    return T.masked_fill(scores, drop, -math.inf)


def suppress_at_begin(scores, state, o):
    """SuppressTokensAtBeginLogitsProcessor: banned at the first generated position."""
    return ban_tokens(scores, o.begin_suppress_tokens)


def renormalize(scores, state, o):
    """renormalize_logits: log_softmax after every other processor."""
    return T.log_softmax(scores, -1)


def length_from_new_tokens(new_tokens, prompt_len, length):
    return T.add(new_tokens, prompt_len)


def length_as_given(new_tokens, prompt_len, length):
    return length


def _min_length(get, defaults, ctx):
    # min_new_tokens (given, or the checkpoint's) wins; lengths count the prompt
    # (transformers' _prepare_generated_length)
    checkpoint_new = defaults.get("min_new_tokens")
    min_new = T.if_none(get("min_new_tokens"), -1 if checkpoint_new is None else checkpoint_new)
    given = T.if_none(get("min_length"), defaults.get("min_length", 0))
    return {"min_length": cond(T.ge(min_new, 0), length_from_new_tokens, length_as_given, min_new, ctx.prompt_len,
                               given)}


def _temperature(get, defaults, ctx):
    v = T.add(T.if_none(get("temperature"), defaults.get("temperature", 1.0)), 0.0)
    T.check(T.logical_or(T.logical_not(ctx.sample), T.gt(v, 0.0)), "generate: temperature must be > 0")
    return {"temperature": v}


def _bad_words(get, defaults, ctx):
    default = T.param(default_weight("bad_words_ids")) if defaults.get("bad_words_ids") else \
        T.full([0, 1], -1, dtype="i64")
    return SB.resolve_bad_words(T.if_none(get("bad_words_ids"), default), ctx)


def _sequence_bias(get, defaults, ctx):
    default = T.param(default_weight("sequence_bias")) if defaults.get("sequence_bias") else T.full([0, 2], -1.0)
    return SB.resolve_sequence_bias(T.if_none(get("sequence_bias"), default), ctx)


def _optional_token(name):
    """resolve for a token id option whose None means off (-1 in the program)."""
    def resolve(get, defaults, ctx):
        default = defaults.get(name)
        v = T.if_none(get(name), -1 if default is None else default)
        T.check(T.lt(v, ctx.ids.vocab_size), f"generate: {name} is not in the {vocabulary(ctx.ids)}")
        return {name: v}
    return resolve


def _token_mask(name):
    """resolve for a token list option: a [vocab] bool mask (checkpoint default: a weight)."""
    def resolve(get, defaults, ctx):
        V = ctx.ids.vocab_size
        default = T.param(default_weight(name)) if defaults.get(name) else T.zeros([0], dtype="i64")
        return {name: T.scatter(T.full([V], False, dtype="bool"), 0, T.if_none(get(name), default), True)}
    return resolve


def default_weight(name: str) -> str:
    """The weight holding a token list option's checkpoint default (written by the importer)."""
    return f"generation_config.{name}"


def token_list_defaults(defaults: dict) -> dict:
    """{weight name: array in the program's form} for the token list, token sequence
    and sequence bias options the checkpoint sets."""
    return {default_weight(i.name): i.check(defaults[i.name], {}) for p in _REGISTRY for i in p.inputs
            if i.kind in ("tokens", "sequences", "bias") and defaults.get(i.name)}


def _begin_suppress(get, defaults, ctx):
    # transformers: the first generated position, one later when a forced BOS takes it
    bos = defaults.get("forced_bos_token_id")
    forced = T.ge(T.if_none(get("forced_bos_token_id"), -1 if bos is None else bos), 0)
    late = T.logical_and(T.eq(ctx.prompt_len, 1), forced)
    return {**_token_mask("begin_suppress_tokens")(get, defaults, ctx),
            "begin_index": cond(late, one_later, as_is, ctx.prompt_len)}


def one_later(index):
    return T.add(index, 1)


def as_is(index):
    return index


def _float_option(name, off, check, message):
    """resolve for a float option (None: the checkpoint's value, or `off`)."""
    def resolve(get, defaults, ctx):
        default = defaults.get(name)
        v = T.add(T.if_none(get(name), off if default is None else default), 0.0)
        T.check(check(v), message)
        return {name: v}
    return resolve


# Registration order: the warpers' inputs come first so that generate keeps the
# input order it had before the registry (positional callers stay valid).
register(Processor("temperature", divide_by_temperature, stage="warp",
                   inputs=(float_input("temperature", lambda v: v > 0, "> 0 (for greedy search pass do_sample=False)",
                                       default=1.0),),
                   options=("temperature",),
                   resolve=_temperature,
                   when=lambda s, o: T.ne(o.temperature, 1.0),
                   doc="sampling temperature (scores / temperature)"))
register(Processor("top_k", top_k_filter, stage="warp", inputs=(int_input("top_k", 0, default=50),), options=("top_k",),
                   resolve=_plain("top_k", lambda d: d.get("top_k", 50), lambda v: T.ge(v, 0),
                                  "generate: top_k must be >= 0"),
                   when=lambda s, o: T.ne(o.top_k, 0), doc="keep the k best scores"))
register(Processor("top_p", top_p_filter, stage="warp",
                   inputs=(float_input("top_p", lambda v: 0.0 <= v <= 1.0, "in [0, 1]", default=1.0),), options=("top_p",),
                   resolve=_plain("top_p", lambda d: d.get("top_p", 1.0),
                                  lambda v: T.logical_and(T.ge(v, 0.0), T.le(v, 1.0)),
                                  "generate: top_p must be in [0, 1]", as_float=True),
                   when=lambda s, o: T.lt(o.top_p, 1.0), doc="nucleus sampling"))
register(Processor("min_p", min_p_filter, stage="warp",
                   inputs=(float_input("min_p", lambda v: 0.0 <= v <= 1.0, "in [0, 1]", default=None),),
                   options=("min_p",),
                   resolve=_float_option("min_p", -1.0, lambda v: T.le(v, 1.0), "generate: min_p must be in [0, 1]"),
                   when=lambda s, o: T.ge(o.min_p, 0.0), doc="drop tokens below min_p x the best probability"))
register(Processor("typical_p", typical_filter, stage="warp",
                   inputs=(float_input("typical_p", lambda v: 0.0 < v <= 1.0, "in (0, 1]", default=1.0),),
                   options=("typical_p",),
                   resolve=_float_option("typical_p", 1.0, lambda v: T.logical_and(T.gt(v, 0.0), T.le(v, 1.0)),
                                         "generate: typical_p must be in (0, 1]"),
                   when=lambda s, o: T.lt(o.typical_p, 1.0), doc="locally typical sampling"))
register(Processor("epsilon_cutoff", epsilon_filter, stage="warp",
                   inputs=(float_input("epsilon_cutoff", lambda v: 0.0 <= v < 1.0, "in [0, 1)", default=0.0),),
                   options=("epsilon_cutoff",),
                   resolve=_float_option("epsilon_cutoff", 0.0, lambda v: T.logical_and(T.ge(v, 0.0), T.lt(v, 1.0)),
                                         "generate: epsilon_cutoff must be in [0, 1)"),
                   when=lambda s, o: T.gt(o.epsilon_cutoff, 0.0), doc="drop tokens below a probability"))
register(Processor("sequence_bias", SB.add_sequence_bias,
                   inputs=(sequence_bias_input("sequence_bias", "bias the last token of token sequences: a dict "
                                               "{(ids): bias} or list [[ids], bias]", default=None),),
                   options=("sequence_bias_single", "sequence_bias_prefix", "sequence_bias_values",
                            "sequence_bias_onehot", "sequence_bias_multi_on", "sequence_bias_on"),
                   resolve=_sequence_bias, when=lambda s, o: o.sequence_bias_on,
                   doc="bias a token that completes a sequence (before the other processors, as transformers)"))
register(Processor("repetition_penalty", penalize_repeats,
                   inputs=(float_input("repetition_penalty", lambda v: v > 0, "> 0", default=1.0),),
                   options=("repetition_penalty", "repetition_ignore"), resolve=_repetition_penalty,
                   when=lambda s, o: T.ne(o.repetition_penalty, 1.0), doc="penalize tokens already in the row"))
register(Processor("no_repeat_ngram_size", ban_ngrams, inputs=(int_input("no_repeat_ngram_size", 0, default=0),),
                   options=("no_repeat_ngram_size",),
                   resolve=_plain("no_repeat_ngram_size", lambda d: d.get("no_repeat_ngram_size", 0),
                                  lambda v: T.ge(v, 0), "generate: no_repeat_ngram_size must be >= 0"),
                   when=lambda s, o: T.logical_and(T.gt(o.no_repeat_ngram_size, 0),
                                                   T.ge(s.cur_len, o.no_repeat_ngram_size)),
                   doc="ban tokens that would repeat an n-gram of the row"))
register(Processor("bad_words_ids", SB.ban_bad_words,
                   inputs=(token_sequences_input("bad_words_ids", "token sequences never generated", default=None),),
                   options=("bad_words_banned", "bad_words_prefix", "bad_words_last", "bad_words_on",
                            "bad_words_multi_on"),
                   resolve=_bad_words, when=lambda s, o: o.bad_words_on,
                   doc="ban token sequences (one-token entries at every step)"))
register(Processor("min_length", ban_eos,
                   inputs=(int_input("min_length", 0, default=0), int_input("min_new_tokens", 0, default=None)),
                   options=("min_length",), resolve=_min_length,
                   when=lambda s, o: T.lt(s.cur_len, o.min_length), doc="ban EOS while the row is shorter"))
register(Processor("forced_bos_token_id", force_bos, inputs=(token_input("forced_bos_token_id", default=None),),
                   options=("forced_bos_token_id",), resolve=_optional_token("forced_bos_token_id"),
                   when=lambda s, o: T.logical_and(T.ge(o.forced_bos_token_id, 0), T.eq(s.cur_len, 1)),
                   doc="the first generated token"))
register(Processor("forced_eos_token_id", force_eos, inputs=(token_input("forced_eos_token_id", default=None),),
                   options=("forced_eos_token_id",), resolve=_optional_token("forced_eos_token_id"),
                   when=lambda s, o: T.logical_and(T.ge(o.forced_eos_token_id, 0), T.eq(s.cur_len, T.sub(s.limit, 1))),
                   doc="the token forced at max_length - 1"))
register(Processor("suppress_tokens", suppress, inputs=(token_list_input("suppress_tokens", default=None),),
                   options=("suppress_tokens",), resolve=_token_mask("suppress_tokens"),
                   # Skipped when the list is empty (most checkpoints): the ban is a pass over
                   # every score of every row, [batch x beams, vocab], at every step.
                   when=lambda s, o: T.any(o.suppress_tokens),
                   doc="token ids banned at every step"))
register(Processor("begin_suppress_tokens", suppress_at_begin,
                   inputs=(token_list_input("begin_suppress_tokens", default=None),),
                   options=("begin_suppress_tokens", "begin_index"), resolve=_begin_suppress,
                   when=lambda s, o: T.eq(s.cur_len, o.begin_index),
                   doc="token ids banned at the first generated position"))
register(Processor("renormalize_logits", renormalize, stage="last", inputs=(bool_input("renormalize_logits", default=False),),
                   options=("renormalize_logits",),
                   resolve=_plain("renormalize_logits", lambda d: d.get("renormalize_logits", False)),
                   when=lambda s, o: o.renormalize_logits, doc="log_softmax after the processors"))
register(Processor("whisper_timestamps", TS.timestamp_rules,
                   inputs=(bool_input("return_timestamps", "Whisper: timestamp tokens in pairs around each segment "
                                      "(WhisperTimeStampLogitsProcessor)", default=False),),
                   options=("return_timestamps", "timestamps_from"), resolve=TS.resolve,
                   when=lambda s, o: o.return_timestamps,
                   import_fields=("no_timestamps_token_id", "max_initial_timestamp_index"), constants=TS.constants,
                   asked=lambda get: T.if_none(get("return_timestamps"), False),
                   absent_message="generate: return_timestamps needs a Whisper program whose generation_config has "
                                  "no_timestamps_token_id",
                   doc="Whisper's timestamp tokens: in pairs, never backwards, forced when likelier than any text"))
