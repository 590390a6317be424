"""Marian (BART-style) encoder-decoder written once with the op front-end.

The same functions run eagerly (C++ or reference ops) or are traced into a program
whose entry functions share one KV cache object:

    encode(input_ids, attention_mask) -> encoder states
    init_cache(encoder_states, rows, max_len) -> KVCache with cross-attention K/V
    decode_step(cache, tokens, source_mask, position) -> next-token logits
    generate(input_ids, attention_mask=None, max_length=None, ..., seed=None)
        -> (sequences, sequences_scores or None, scores or None)

Cost shape: the encoder and the cross-attention K/V projections run once per
generate call; each decode step feeds one token per row and appends one position
to the self-attention cache, so a generate call costs N + M token passes.
generate takes transformers' generation options as inputs (GENERATE_OPTIONS; None
is the checkpoint's default) and runs greedy search, sampling, beam search or beam
sampling inside the program (see docs/generation.md).
Beam rows share their sentence's cross-attention K/V: the decoder's queries of one
sentence are laid out as [sentence, heads, beams, head_dim] against K/V of shape
[sentence, heads, source_len, head_dim], so no K/V is copied per beam.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

from .. import final_tokens
from .. import ops as T
from ..builder import ProgramBuilder
from ..control import cond, emit, while_loop
from ..types import ObjectType, Tensor

KVCache = ObjectType("KVCache")

ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "tanh": "tanh"}


class UnsupportedConfig(ValueError):
    """The checkpoint asks for something this importer does not compute."""


@dataclass
class MarianSpec:
    """Everything in a Marian config that changes the computation."""
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    encoder_ffn_dim: int
    decoder_ffn_dim: int
    vocab_size: int
    decoder_vocab_size: int
    activation: str
    scale_embedding: bool
    pad_token_id: int
    eos_token_id: int
    decoder_start_token_id: int
    max_position_embeddings: int
    # weight names, after resolving ties to one stored tensor
    encoder_embed: str = "model.encoder.embed_tokens.weight"
    decoder_embed: str = "model.decoder.embed_tokens.weight"
    lm_head: str = "lm_head.weight"
    # None (f32) or "int8": every linear weight stored as int8 rows with one f32 scale per row
    quantize: str | None = None
    # Generation defaults: the checkpoint's generation_config over transformers'
    # global defaults. The run-time options of `generate` fall back to these.
    max_length: int = 20
    num_beams: int = 1
    do_sample: bool = False
    num_return_sequences: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False  # True, False or "never"
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    min_length: int = 0
    forced_bos_token_id: int | None = None
    suppress_tokens: list = field(default_factory=list)
    # A log_softmax after the processors: it cannot change a greedy choice, only
    # the scores beam search accumulates.
    renormalize_logits: bool = False
    # Import-time only: single-token bans (bad_words_ids) and the forced EOS token.
    bad_words: list = field(default_factory=list)
    forced_eos_token_id: int | None = None

    @property
    def embed_scale(self) -> float:
        return math.sqrt(self.d_model) if self.scale_embedding else 1.0


def _act(spec: MarianSpec, x):
    kind = ACTIVATIONS[spec.activation]
    if kind == "silu":
        return T.silu(x)
    if kind == "gelu":
        return T.gelu(x)
    if kind == "gelu_tanh":
        return T.gelu(x, approximate="tanh")
    if kind == "relu":
        return T.relu(x)
    return T.tanh(x)


def _proj(spec, x, prefix: str, layer):
    bias = T.param(prefix + ".bias", layer)
    if spec.quantize is not None:  # weights quantized offline by the import (pycompiler/quantize.py)
        linear = T.linear_int8 if spec.quantize == "int8" else T.linear_w8a8
        return linear(x, T.param(f"{prefix}.weight.{spec.quantize}", layer), T.param(prefix + ".weight.scale", layer), bias)
    return T.linear(x, T.param(prefix + ".weight", layer), bias)


def _heads(x, rows, length, heads: int, head_dim: int):
    """[rows, length, heads * head_dim] -> [rows, heads, length, head_dim]."""
    return T.transpose(T.reshape(x, [rows, length, heads, head_dim]), 1, 2)


def _merge(x, rows, length, d_model: int):
    """[rows, heads, length, head_dim] -> [rows, length, d_model]."""
    return T.reshape(T.transpose(x, 1, 2), [rows, length, d_model])


def _positions(table: str, start, end):
    """Rows [start, end) of a position table; past its end is an error naming the
    position (a slice would quietly come back short)."""
    return T.index_select(T.param(table), 0, T.arange(start, end))


def _add_norm(x, h, prefix: str, layer):
    return T.layer_norm(T.add(x, h), T.param(prefix + ".weight", layer), T.param(prefix + ".bias", layer), eps=1e-5)


def build(spec: MarianSpec, weights, meta=None) -> ProgramBuilder:
    """Traces the Marian program for `spec` over `weights` (name -> array)."""
    pb = ProgramBuilder(weights=weights, meta=meta or {})
    d, he, hd = spec.d_model, spec.encoder_heads, spec.decoder_heads
    dh_e, dh_d = d // he, d // hd
    V = spec.decoder_vocab_size

    @pb.function
    def encoder_layer(x: Tensor, mask: Tensor, layer: int) -> Tensor:
        p = "model.encoder.layers.{}."
        rows, length = T.size(x, 0), T.size(x, 1)
        q = _heads(_proj(spec, x, p + "self_attn.q_proj", layer), rows, length, he, dh_e)
        k = _heads(_proj(spec, x, p + "self_attn.k_proj", layer), rows, length, he, dh_e)
        v = _heads(_proj(spec, x, p + "self_attn.v_proj", layer), rows, length, he, dh_e)
        a = _merge(T.attention(q, k, v, mask, scale=dh_e ** -0.5), rows, length, d)
        x = _add_norm(x, _proj(spec, a, p + "self_attn.out_proj", layer), p + "self_attn_layer_norm", layer)
        h = _proj(spec, _act(spec, _proj(spec, x, p + "fc1", layer)), p + "fc2", layer)
        return _add_norm(x, h, p + "final_layer_norm", layer)

    @pb.function
    def source_mask(attention_mask: Tensor) -> Tensor:
        """[batch, source_len] 0/1 -> bool [batch, 1, 1, source_len] (True = attend)."""
        return T.reshape(T.cast(attention_mask, "bool"), [T.size(attention_mask, 0), 1, 1, T.size(attention_mask, 1)])

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        length = T.size(input_ids, 1)
        x = T.mul(T.embedding(input_ids, T.param(spec.encoder_embed)), spec.embed_scale)
        x = T.add(x, _positions("model.encoder.embed_positions.weight", 0, length))
        mask = source_mask(attention_mask)
        for layer in range(spec.encoder_layers):
            x = encoder_layer(x, mask, layer)
        return x

    @pb.function
    def init_cache(encoder_states: Tensor, rows: int, max_len: int) -> KVCache:
        """A cache for `rows` decoder rows (batch x beams) with the cross-attention K/V
        of every layer computed now, once, from the encoder states."""
        p = "model.decoder.layers.{}.encoder_attn."
        batch, length = T.size(encoder_states, 0), T.size(encoder_states, 1)
        cache = T.kv_cache(spec.decoder_layers, rows, hd, dh_d, max_len)
        for layer in range(spec.decoder_layers):
            k = _heads(_proj(spec, encoder_states, p + "k_proj", layer), batch, length, hd, dh_d)
            v = _heads(_proj(spec, encoder_states, p + "v_proj", layer), batch, length, hd, dh_d)
            cache = T.kv_set_cross(cache, layer, k, v)
        return cache

    @pb.function
    def decoder_layer(x: Tensor, cache: KVCache, source_mask: Tensor, layer: int) -> Tensor:
        """One decoder layer for one new position per row: x [rows, 1, d_model]."""
        p = "model.decoder.layers.{}."
        rows = T.size(x, 0)
        q = _heads(_proj(spec, x, p + "self_attn.q_proj", layer), rows, 1, hd, dh_d)
        k = _heads(_proj(spec, x, p + "self_attn.k_proj", layer), rows, 1, hd, dh_d)
        v = _heads(_proj(spec, x, p + "self_attn.v_proj", layer), rows, 1, hd, dh_d)
        k_all, v_all = T.kv_append(cache, layer, k, v)
        a = _merge(T.attention(q, k_all, v_all, None, scale=dh_d ** -0.5), rows, 1, d)
        x = _add_norm(x, _proj(spec, a, p + "self_attn.out_proj", layer), p + "self_attn_layer_norm", layer)
        # Cross-attention: the beams of a sentence become its query positions.
        ck, cv = T.kv_cross(cache, layer)
        batch = T.size(ck, 0)
        beams = T.floordiv(rows, batch)
        q = _proj(spec, x, p + "encoder_attn.q_proj", layer)
        q = T.transpose(T.reshape(q, [batch, beams, hd, dh_d]), 1, 2)
        a = T.attention(q, ck, cv, source_mask, scale=dh_d ** -0.5)
        a = T.reshape(T.transpose(a, 1, 2), [rows, 1, d])
        x = _add_norm(x, _proj(spec, a, p + "encoder_attn.out_proj", layer), p + "encoder_attn_layer_norm", layer)
        h = _proj(spec, _act(spec, _proj(spec, x, p + "fc1", layer)), p + "fc2", layer)
        return _add_norm(x, h, p + "final_layer_norm", layer)

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, source_mask: Tensor, position: int) -> Tensor:
        """Logits [rows, vocab] for tokens [rows, 1] at `position` (0 for the start token)."""
        x = T.mul(T.embedding(tokens, T.param(spec.decoder_embed)), spec.embed_scale)
        x = T.add(x, _positions("model.decoder.embed_positions.weight", position, T.add(position, 1)))
        for layer in range(spec.decoder_layers):
            x = decoder_layer(x, cache, source_mask, layer)
        x = T.reshape(x, [T.size(x, 0), d])
        if spec.quantize is not None:
            linear = T.linear_int8 if spec.quantize == "int8" else T.linear_w8a8
            logits = linear(x, T.param(f"{spec.lm_head}.{spec.quantize}"), T.param(spec.lm_head + ".scale"))
        else:
            logits = T.linear(x, T.param(spec.lm_head))
        return T.add(logits, T.param("final_logits_bias"))

    _build_generation(pb, spec, encode, source_mask, init_cache, decode_step)
    # generate's inputs keep transformers' names (no op or function may take one).
    names = [p.name for p in pb.program().function("generate").params]
    if names != ["input_ids", *GENERATE_OPTIONS]:
        raise AssertionError(f"generate's inputs were renamed: {names}")
    return pb


# ---------------------------------------------------------------- generation

NEG = -1.0e9  # transformers' "very large negative" for beams that must not be chosen

# Options of the logits processors, in the order the processing functions take them
# (after scores, seq, cur_len, min_keep), and the rest of a search's run-time options.
PROCESSOR_OPTIONS = ("limit", "min_len", "rep", "ngram", "bos", "suppress", "sample", "temp", "top_k", "top_p",
                     "renorm")
SEARCH_OPTIONS = PROCESSOR_OPTIONS + ("out_scores", "generator")

# The MarianSpec fields that hold generate's defaults (also written to meta.json).
GENERATION_DEFAULT_FIELDS = ("max_length", "num_beams", "do_sample", "num_return_sequences", "length_penalty",
                             "early_stopping", "temperature", "top_k", "top_p", "repetition_penalty",
                             "no_repeat_ngram_size", "min_length", "forced_bos_token_id", "suppress_tokens",
                             "renormalize_logits")

# generate's inputs after input_ids: transformers' keyword names. None means the
# checkpoint's default (generation_config, baked in at import).
GENERATE_OPTIONS = ("attention_mask", "max_length", "max_new_tokens", "num_beams", "do_sample", "num_return_sequences",
                    "length_penalty", "early_stopping", "temperature", "top_k", "top_p", "repetition_penalty",
                    "no_repeat_ngram_size", "min_length", "min_new_tokens", "forced_bos_token_id", "suppress_tokens",
                    "renormalize_logits", "output_scores", "seed")


def _named(*names):
    """Gives a `*args` function these parameter names, so the traced IR function reads
    `def beam_step(running, ..., top_p, renorm, ...)` rather than `arg_0, arg_1, ...`."""
    def deco(fn):
        def f(*args):
            return fn(*args)

        f.__name__ = f.__qualname__ = fn.__name__
        f.__doc__ = fn.__doc__
        f.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        return f
    return deco


class _Opts(tuple):
    """The search options as a tuple (to pass on with *o) with names (o.limit, ...)."""

    def __new__(cls, values):
        values = tuple(values)
        if len(values) != len(SEARCH_OPTIONS):
            raise TypeError(f"expected {len(SEARCH_OPTIONS)} search options, got {len(values)}")
        return super().__new__(cls, values)

    def __getattr__(self, name):
        if name not in SEARCH_OPTIONS:
            raise AttributeError(name)
        return self[SEARCH_OPTIONS.index(name)]

    @property
    def proc(self):
        return self[:len(PROCESSOR_OPTIONS)]


# Small branch functions of cond (each becomes one IR function per signature).

def unchanged(scores, *rest):
    return scores


def first(a, b):
    return a


def second(a, b):
    return b


def limit_minus_one(limit, new_len):
    return T.sub(limit, 1)


def len_minus_one(limit, new_len):
    return T.sub(new_len, 1)


def append_step(scores, step):
    """Per-step scores for output_scores: [steps, rows, V] grows by one step."""
    return T.concat(scores, T.unsqueeze(step, 0), dim=0)


def log_softmax_last(scores):
    return T.log_softmax(scores, -1)


def divide(scores, by):
    return T.div(scores, by)


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


def penalize_repeats(scores, seq, rep):
    """RepetitionPenaltyLogitsProcessor: tokens already in the row are divided by the
    penalty when positive, multiplied when negative."""
    seen = T.gather(scores, 1, seq)
    seen = T.where(T.lt(seen, 0.0), T.mul(seen, rep), T.div(seen, rep))
    return T.scatter(scores, 1, seq, seen)


def top_k_filter(scores, top_k, min_keep):
    """TopKLogitsWarper: scores below the k-th best become -inf."""
    k = T.minimum(T.maximum(top_k, min_keep), T.size(scores, 1))
    best, _ = T.topk(scores, k)
    return T.masked_fill(scores, T.lt(scores, T.slice(best, 1, T.sub(k, 1), k)), -math.inf)


def top_p_filter(scores, top_p, min_keep):
    """TopPLogitsWarper: sort ascending, drop the tokens whose cumulative probability is
    at most 1 - top_p, but keep the min_keep most likely."""
    V = T.size(scores, 1)
    desc, order = T.topk(scores, V)
    rev = T.arange(T.sub(V, 1), -1, -1)
    asc, asc_order = T.index_select(desc, 1, rev), T.index_select(order, 1, rev)
    cum = T.cumsum(T.softmax(asc, -1), 1)
    drop = T.logical_and(T.le(cum, T.sub(1.0, top_p)), T.lt(T.arange(0, V), T.sub(V, min_keep)))
    drop = T.scatter(T.full_like(scores, False, dtype="bool"), 1, asc_order, drop)
    return T.masked_fill(scores, drop, -math.inf)


def warp(scores, temp, top_k, top_p, min_keep):
    """The sampling warpers, in transformers' order: temperature, top-k, top-p."""
    scores = cond(T.ne(temp, 1.0), divide, unchanged, scores, temp)
    scores = cond(T.ne(top_k, 0), top_k_filter, unchanged, scores, top_k, min_keep)
    return cond(T.lt(top_p, 1.0), top_p_filter, unchanged, scores, top_p, min_keep)


def ngram_match(j, match, seq, n, windows, cur_len):
    return T.lt(j, T.sub(n, 1))


def ngram_compare(j, match, seq, n, windows, cur_len):
    """Window i's j-th token against the j-th token of the last n-1 tokens."""
    ith = T.slice(seq, 1, j, T.add(j, windows))
    at = T.add(T.sub(cur_len, T.sub(n, 1)), j)
    match = T.logical_and(match, T.eq(ith, T.slice(seq, 1, at, T.add(at, 1))))
    return T.add(j, 1), match, seq, n, windows, cur_len


def ban_ngrams(scores, seq, cur_len, n):
    """NoRepeatNGramLogitsProcessor: a token that would complete an n-gram already in
    the row is banned. Window i is seq[:, i:i+n]; it bans its last token when its
    first n-1 tokens equal the row's last n-1 tokens."""
    rows, V = T.size(scores, 0), T.size(scores, 1)
    windows = T.add(T.sub(cur_len, n), 1)
    match = T.full([rows, windows], True, dtype="bool")
    _, match, _, _, _, _ = while_loop(ngram_match, ngram_compare, 0, match, seq, n, windows, cur_len)
    last = T.slice(seq, 1, T.sub(n, 1), T.add(T.sub(n, 1), windows))
    banned = T.scatter(T.full([rows, T.add(V, 1)], False, dtype="bool"), 1, T.where(match, last, V), True)
    return T.masked_fill(scores, T.slice(banned, 1, 0, V), -math.inf)


def no_repeat_ngram(scores, seq, cur_len, n):
    return cond(T.ge(cur_len, n), ban_ngrams, unchanged, scores, seq, cur_len, n)


def force_token(scores, token):
    """Every score -inf but `token`'s, which is 0 (forced BOS / EOS)."""
    return T.where(T.eq(T.arange(0, T.size(scores, 1)), token), 0.0, T.full_like(scores, -math.inf))


def _build_generation(pb, spec: MarianSpec, encode, source_mask, init_cache, decode_step):
    """generate(input_ids, attention_mask=None, **options) and its search functions."""
    V = spec.decoder_vocab_size
    eos, pad, start = spec.eos_token_id, spec.pad_token_id, spec.decoder_start_token_id
    fill = pad if pad else eos  # transformers pads finished beams with `pad_token_id or eos_token_id`

    def ban(scores, token):
        return T.masked_fill(scores, T.eq(T.arange(0, V), token), -math.inf)

    def ban_eos(scores):
        return ban(scores, eos)

    def force_eos(scores):
        return force_token(scores, spec.forced_eos_token_id)

    @pb.function(arg_types=["Tensor", "Tensor", "int", "int"] + ["Any"] * len(PROCESSOR_OPTIONS))
    @_named("scores", "seq", "cur_len", "min_keep", *PROCESSOR_OPTIONS)
    def process(scores, seq, cur_len, min_keep, *proc):
        """transformers' logits processors for `seq` [rows, cur_len], in its order:
        repetition penalty, no-repeat n-grams, bad words (the checkpoint's), min length,
        forced BOS, forced EOS at limit - 1, suppressed tokens, then when sampling
        temperature / top-k / top-p, and log_softmax last if renormalizing."""
        limit, min_len, rep, ngram, bos, suppress, sample, temp, top_k, top_p, renorm = proc
        scores = cond(T.ne(rep, 1.0), penalize_repeats, unchanged, scores, seq, rep)
        scores = cond(T.gt(ngram, 0), no_repeat_ngram, unchanged, scores, seq, cur_len, ngram)
        for token in spec.bad_words:
            scores = ban(scores, token)
        scores = cond(T.lt(cur_len, min_len), ban_eos, unchanged, scores)
        scores = cond(T.logical_and(T.ge(bos, 0), T.eq(cur_len, 1)), force_token, unchanged, scores, bos)
        if spec.forced_eos_token_id is not None:
            scores = cond(T.eq(cur_len, T.sub(limit, 1)), force_eos, unchanged, scores)
        scores = T.masked_fill(scores, suppress, -math.inf)
        scores = cond(sample, warp, unchanged, scores, temp, top_k, top_p, min_keep)
        return cond(renorm, log_softmax_last, unchanged, scores)

    # ---- greedy search and sampling (transformers' _sample): one row per sequence

    @_named("seq", "unfinished", "cur_len", "cache", "mask", "scores", *SEARCH_OPTIONS)
    def sample_continue(seq, unfinished, cur_len, cache, mask, scores, *opts):
        """Some row is unfinished and the length limit is not reached."""
        o = _Opts(opts)
        return T.logical_and(T.any(unfinished), T.lt(cur_len, o.limit))

    @_named("seq", "unfinished", "cur_len", "cache", "mask", "scores", *SEARCH_OPTIONS)
    def sample_step(seq, unfinished, cur_len, cache, mask, scores, *opts):
        """One token per row: processors on the raw logits, then argmax (greedy) or a draw
        from softmax (sampling); finished rows get pad."""
        o = _Opts(opts)
        pos = T.sub(cur_len, 1)
        logits = decode_step(cache, T.slice(seq, 1, pos, cur_len), mask, pos)
        step = process(logits, seq, cur_len, 1, *o.proc)
        scores = cond(o.out_scores, append_step, first, scores, step)
        nxt = cond(o.sample, draw_token, best_token, step, o.generator)
        nxt = T.where(unfinished, nxt, pad)
        seq = T.concat(seq, T.unsqueeze(nxt, 1), dim=1)
        unfinished = T.logical_and(T.logical_and(unfinished, T.ne(nxt, eos)), final_tokens.emit_step(nxt))
        return (seq, unfinished, T.add(cur_len, 1), cache, mask, scores) + tuple(o)

    @_named("states", "mask", "num_beams", "num_return", "length_penalty", "early_stopping", *SEARCH_OPTIONS)
    def sample_search(states, mask, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Greedy search, or sampling with num_return rows per sentence (their cache rows
        share the sentence's cross-attention K/V)."""
        o = _Opts(opts)
        T.check(T.logical_or(o.sample, T.eq(num_return, 1)), "generate: greedy search (num_beams=1, do_sample=False) "
                "returns one sequence per input: num_return_sequences must be 1")
        rows = T.mul(T.size(states, 0), num_return)
        cache = init_cache(states, rows, o.limit)
        seq = T.full([rows, 1], start, dtype="i64")
        unfinished = T.logical_and(T.full([rows], True, dtype="bool"), final_tokens.emit_prompt(seq))
        scores = T.zeros([0, rows, V])
        seq, unfinished, cur_len, cache, mask, scores, *_ = while_loop(sample_continue, sample_step, seq, unfinished, 1,
                                                                       cache, mask, scores, *o)
        return seq, None, cond(o.out_scores, first, second, scores, None)

    # ---- beam search (transformers' _beam_search, vectorized over [batch, beams])

    BEAM_STATE = ("running", "running_scores", "done_seq", "done_scores", "done", "done_len", "improvable",
                  "all_hit", "cur_len", "cache", "mask", "scores", "length_penalty", "early_stopping", "streamed", "go")

    @_named(*BEAM_STATE, *SEARCH_OPTIONS)
    def beam_continue(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                      cache, mask, scores, length_penalty, early_stopping, streamed, go, *opts):
        """Some sentence can still improve, early_stopping=True has not filled every
        sentence, and some candidate of the last step did not hit a stopping criterion."""
        full = T.logical_and(T.all(done), T.eq(early_stopping, 1))
        return T.logical_and(T.logical_and(T.any(improvable), T.logical_not(full)), T.logical_not(all_hit))

    @_named(*BEAM_STATE, *SEARCH_OPTIONS)
    def beam_step(running, running_scores, done_seq, done_scores, done, done_len, improvable, all_hit, cur_len,
                  cache, mask, scores, length_penalty, early_stopping, streamed, go, *opts):
        """One step for every beam: log_softmax, processors, add the beam scores, keep the
        top 2K of K*V candidates, the best K that did not finish run on (their cache rows
        reordered), the top K that finished enter the K finished slots."""
        o = _Opts(opts)
        B, K = T.size(running_scores, 0), T.size(running_scores, 1)
        K2 = T.mul(K, 2)
        pos = T.sub(cur_len, 1)
        logits = decode_step(cache, T.slice(running, 1, pos, cur_len), mask, pos)
        step = process(T.log_softmax(logits, -1), running, cur_len, 2, *o.proc)
        scores = cond(o.out_scores, append_step, first, scores, step)
        acc = T.add(T.reshape(step, [B, K, V]), T.unsqueeze(running_scores, 2))
        top, top_index = cond(o.sample, sampled_candidates, best_candidates, T.reshape(acc, [B, T.mul(K, V)]), K2,
                              o.generator)
        beam, token = T.floordiv(top_index, V), T.remainder(top_index, V)
        history = T.gather(T.reshape(running, [B, K, cur_len]), 1, T.expand(T.unsqueeze(beam, 2), [B, K2, cur_len]))
        candidates = T.concat(history, T.unsqueeze(token, 2), dim=2)  # [B, 2K, cur_len + 1]
        new_len = T.add(cur_len, 1)
        # a host's "stop" ends the search as max_length does: every candidate finishes
        hits = T.logical_or(T.logical_or(T.eq(token, eos), T.ge(new_len, o.limit)), T.logical_not(go))
        # the running beams: the best K candidates that did not hit
        live = T.add(top, T.mul(T.cast(hits, "f32"), NEG))
        _, keep = T.topk(live, K)
        running_scores = T.gather(live, 1, keep)
        running = T.reshape(T.gather(candidates, 1, T.expand(T.unsqueeze(keep, 2), [B, K, new_len])), [T.mul(B, K),
                                                                                                        new_len])
        # the finished slots: the top K candidates that hit, length-penalized
        entered = T.logical_and(hits, T.lt(T.arange(0, K2), K))
        final = T.div(top, T.pow(cur_len, length_penalty))
        full = T.logical_and(T.all(done, 1, keepdim=True), T.eq(early_stopping, 1))
        final = T.add(final, T.mul(T.cast(full, "f32"), NEG))
        final = T.add(final, T.mul(T.cast(T.logical_not(improvable), "f32"), NEG))
        final = T.add(final, T.mul(T.cast(T.logical_not(entered), "f32"), NEG))
        merged_seq = T.concat(T.concat(done_seq, T.full([B, K, 1], fill, dtype="i64"), dim=2), candidates, dim=1)
        merged_scores = T.concat(done_scores, final, dim=1)
        _, best = T.topk(merged_scores, K)
        done_seq = T.gather(merged_seq, 1, T.expand(T.unsqueeze(best, 2), [B, K, new_len]))
        done_scores = T.gather(merged_scores, 1, best)
        done = T.gather(T.concat(done, entered, dim=1), 1, best)
        done_len = T.gather(T.concat(done_len, T.full([B, K2], cur_len, dtype="i64"), dim=1), 1, best)
        # row b*K + k of the cache continues the beam its new token extends
        origin = T.add(T.gather(beam, 1, keep), T.mul(T.unsqueeze(T.arange(0, B), 1), K))
        cache = T.kv_reorder(cache, T.reshape(origin, [T.mul(B, K)]))
        # can a running beam still beat the worst finished one? (sticky per sentence)
        never = T.logical_and(T.eq(early_stopping, 2), T.gt(length_penalty, 0.0))
        best_len = cond(never, limit_minus_one, len_minus_one, o.limit, new_len)
        best_running = T.div(T.slice(running_scores, 1, 0, 1), T.pow(best_len, length_penalty))
        worst_done = T.where(done, T.min(done_scores, 1, keepdim=True), NEG)
        improvable = T.logical_and(improvable, T.any(T.gt(best_running, worst_done), -1, keepdim=True))
        tokens, streamed = final_tokens.beam_step_tokens(running, done_seq, done, done_len, improvable, streamed, B, K)
        go = T.logical_and(go, emit(final_tokens.TOKENS, tokens))
        return (running, running_scores, done_seq, done_scores, done, done_len, improvable, T.all(hits), new_len,
                cache, mask, scores, length_penalty, early_stopping, streamed, go) + tuple(o)

    @_named("states", "mask", "num_beams", "num_return", "length_penalty", "early_stopping", *SEARCH_OPTIONS)
    def beam_search(states, mask, num_beams, num_return, length_penalty, early_stopping, *opts):
        """Beam search (or beam sampling) with K = num_beams rows per sentence; returns the
        num_return best finished hypotheses per sentence, best first, and their scores."""
        o = _Opts(opts)
        T.check(T.le(num_return, num_beams), "generate: num_return_sequences must be at most num_beams")
        B, K = T.size(states, 0), num_beams
        cache = init_cache(states, T.mul(B, K), o.limit)
        running = T.full([T.mul(B, K), 1], start, dtype="i64")
        running_scores = T.expand(T.where(T.gt(T.arange(0, K), 0), NEG, 0.0), [B, K])
        done_seq = T.full([B, K, 1], start, dtype="i64")
        done_scores = T.full([B, K], NEG)
        done = T.full([B, K], False, dtype="bool")
        done_len = T.full([B, K], 0, dtype="i64")
        improvable = T.full([B, 1], True, dtype="bool")
        all_hit = T.any(T.full([1], False, dtype="bool"))
        scores = T.zeros([0, T.mul(B, K), V])
        go = final_tokens.emit_prompt(T.full([B, 1], start, dtype="i64"))
        out = while_loop(beam_continue, beam_step, running, running_scores, done_seq, done_scores, done, done_len,
                         improvable, all_hit, 1, cache, mask, scores, length_penalty, early_stopping,
                         T.full([B], 0, dtype="i64"), go, *o)
        done_seq, done_scores, done_len, scores, streamed = out[2], out[3], out[5], out[11], out[14]
        final_tokens.emit_beam_rest(done_seq, done_len, streamed)
        width = T.add(T.item(T.max(T.slice(done_len, 1, 0, num_return))), 1)
        rows = T.mul(B, num_return)
        seq = T.reshape(T.slice(T.slice(done_seq, 1, 0, num_return), 2, 0, width), [rows, width])
        seq_scores = T.reshape(T.slice(done_scores, 1, 0, num_return), [rows])
        return seq, seq_scores, cond(o.out_scores, first, second, scores, None)

    # ---- options and the entry point

    @pb.function
    def length_from_new_tokens(max_new_tokens: int, max_length: int) -> int:
        return T.add(max_new_tokens, 1)

    @pb.function
    def length_as_given(max_new_tokens: int, max_length: int) -> int:
        return max_length

    suppress_default = None
    if spec.suppress_tokens:
        suppress_default = "generation_config.suppress_tokens"

    @pb.function(arg_types=["Tensor"] + ["Any"] * len(GENERATE_OPTIONS))
    @_named("input_ids", *GENERATE_OPTIONS)
    def generate(input_ids, *options):
        """transformers' generate() for this checkpoint: greedy search, sampling, beam
        search or beam sampling, with the logits processors, all inside the program.
        Every option is an input named as in transformers; None means the checkpoint's
        default (its generation_config). Returns (sequences, sequences_scores or None,
        per-step scores [steps, rows, V] or None)."""
        (attention_mask, max_length, max_new_tokens, num_beams, do_sample, num_return_sequences, length_penalty,
         early_stopping, temperature, top_k, top_p, repetition_penalty, no_repeat_ngram_size, min_length,
         min_new_tokens, forced_bos_token_id, suppress_tokens, renormalize_logits, output_scores, seed) = options
        # Bad inputs fail here, each with its own message, rather than deep inside an op.
        T.check(T.gt(T.size(input_ids, 0), 0), "generate: input_ids has no rows (an empty batch)")
        T.check(T.gt(T.size(input_ids, 1), 0), "generate: input_ids has no tokens (a zero-length source)")
        T.check(T.le(T.size(input_ids, 1), spec.max_position_embeddings),
                f"generate: the source is longer than max_position_embeddings ({spec.max_position_embeddings})")
        attention_mask = T.if_none(attention_mask, T.full_like(input_ids, 1))
        # lengths count the decoder start token; max_new_tokens wins over max_length
        new = T.if_none(max_new_tokens, -1)
        T.check(T.logical_or(T.eq(new, -1), T.gt(new, 0)), "generate: max_new_tokens must be greater than 0")
        limit = cond(T.gt(new, 0), length_from_new_tokens, length_as_given, new,
                     T.if_none(max_length, spec.max_length))
        T.check(T.gt(limit, 1), "generate: max_length must be at least 2 (it counts the decoder start token)")
        T.check(T.le(limit, spec.max_position_embeddings),
                f"generate: max_length (or max_new_tokens + 1) is past max_position_embeddings ({spec.max_position_embeddings})")
        min_new = T.if_none(min_new_tokens, -1)
        min_len = cond(T.ge(min_new, 0), length_from_new_tokens, length_as_given, min_new,
                       T.if_none(min_length, spec.min_length))
        beams = T.if_none(num_beams, spec.num_beams)
        T.check(T.ge(beams, 1), "generate: num_beams must be at least 1")
        num_return = T.if_none(num_return_sequences, spec.num_return_sequences)
        T.check(T.ge(num_return, 1), "generate: num_return_sequences must be at least 1")
        penalty = T.add(T.if_none(length_penalty, spec.length_penalty), 0.0)
        T.check(T.eq(penalty, penalty), "generate: length_penalty must be a number, not NaN")
        stopping = T.option_index(T.if_none(early_stopping, spec.early_stopping), False, True, "never",
                                  what="early_stopping")
        sample = T.if_none(do_sample, spec.do_sample)
        temp = T.add(T.if_none(temperature, spec.temperature), 0.0)
        k = T.if_none(top_k, spec.top_k)
        p = T.add(T.if_none(top_p, spec.top_p), 0.0)
        T.check(T.logical_or(T.logical_not(sample), T.gt(temp, 0.0)), "generate: temperature must be > 0")
        T.check(T.ge(k, 0), "generate: top_k must be >= 0")
        T.check(T.logical_and(T.ge(p, 0.0), T.le(p, 1.0)), "generate: top_p must be in [0, 1]")
        rep = T.add(T.if_none(repetition_penalty, spec.repetition_penalty), 0.0)
        T.check(T.gt(rep, 0.0), "generate: repetition_penalty must be > 0")
        ngram = T.if_none(no_repeat_ngram_size, spec.no_repeat_ngram_size)
        T.check(T.ge(ngram, 0), "generate: no_repeat_ngram_size must be >= 0")
        bos = T.if_none(forced_bos_token_id, -1 if spec.forced_bos_token_id is None else spec.forced_bos_token_id)
        T.check(T.lt(bos, V), "generate: forced_bos_token_id is not in the decoder vocabulary")
        banned = T.if_none(suppress_tokens, T.param(suppress_default) if suppress_default else
                           T.zeros([0], dtype="i64"))
        suppress = T.scatter(T.full([V], False, dtype="bool"), 0, banned, True)
        renorm = T.if_none(renormalize_logits, spec.renormalize_logits)
        out_scores = T.if_none(output_scores, False)
        generator = T.rng(T.if_none(seed, 0))
        states = encode(input_ids, attention_mask)
        mask = source_mask(attention_mask)
        return cond(T.gt(beams, 1), beam_search, sample_search, states, mask, beams, num_return, penalty, stopping,
                    limit, min_len, rep, ngram, bos, suppress, sample, temp, k, p, renorm, out_scores, generator)
