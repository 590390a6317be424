"""What the searches (greedy.py, beam.py) and generate's entry (entry.py) share:
the model and its token ids, the processor chain, and the steps that differ between
an encoder-decoder and a decoder-only model (its cache, its prompt, its logits).

Plain methods run while a search function is traced and add their ops to it; the
functions handed to cond are closures made once here, so each is one IR function.
"""
from __future__ import annotations

from .. import ops as T
from ..control import cond
from . import processors as P
from .branches import keep_cache, named
from .chain import chain_function, chain_idle
from .model import DecoderOnly, EncoderDecoder

# Values the search carries besides the processors' options.
SEARCH_VALUES = ("limit", "sample", "out_scores", "out_logits", "generator", "eos", "n_eos", "fill")


class Search:
    """The model, its ids and processors, as every search function sees them.

    `opts` names the values a search carries after its own state (SEARCH_VALUES,
    then the processors' run-time options), in the order generate passes them."""

    def __init__(self, pb, model, defaults: dict):
        if not isinstance(model, (EncoderDecoder, DecoderOnly)):
            raise TypeError(f"build_generation: model must be an EncoderDecoder or a DecoderOnly, "
                            f"got {type(model).__name__}")
        self.pb, self.model, self.defaults = pb, model, defaults
        self.decoder_only = isinstance(model, DecoderOnly)
        self.ids = model.ids
        self.V, self.pad = self.ids.vocab_size, self.ids.pad
        self.procs = P.chain(defaults)
        self.proc_names = P.carried_options(self.procs)
        self.opts = (*SEARCH_VALUES, *self.proc_names)
        self.process = chain_function(pb, self.procs, self.ids)
        self.prefill_logits = getattr(model, "prefill_logits", None)
        # the encoder's input (a decoder-only model's prompt), and what errors call it
        self.first_input = "input_ids" if self.decoder_only else model.encoder_input
        self.prompt_or_source = "prompt" if self.decoder_only else "source"
        self._prompt_branches()

    def _prompt_branches(self):
        """The cond branches of the prompt's prefill and of the first step's logits."""
        model = self.model

        @named("cache", "tokens", "mask")
        def prefill_prompt(cache, tokens, mask):
            """All prompt positions but the last in one pass (the last is the first step)."""
            return model.prefill(cache, T.slice(tokens, 1, 0, T.sub(T.size(tokens, 1), 1)), mask)

        @named("pending", "cache", "tokens", "mask", "position")
        def prefilled_logits(pending, cache, tokens, mask, position):
            return pending

        @named("pending", "cache", "tokens", "mask", "position")
        def decoded_logits(pending, cache, tokens, mask, position):
            return model.decode_step(cache, tokens, mask, position)

        self._prefill_prompt, self._prefilled_logits, self._decoded_logits = \
            prefill_prompt, prefilled_logits, decoded_logits

    # ---- the processors

    def run_process(self, scores, seq, cur_len, min_keep, o):
        return self.process(scores, seq, cur_len, min_keep, o.limit, o.sample, o.eos,
                            *o.subset(self.proc_names).values())

    def chain_idle(self, seq, lengths, o):
        """A traced bool [1]: the processor chain leaves the scores as they are at every
        length in the i64 tensor `lengths` (chain.chain_idle), for these options."""
        return chain_idle(self.procs, self.ids, (seq, lengths, 1, o.limit, o.sample, o.eos),
                          o.subset(self.proc_names))

    def banned_in_log_softmax(self, logits, o):
        """Beam search's log_softmax with the one-token bad words set to -inf in the same
        pass (log_softmax_masked), and the options that then skip the processor's own pass
        over the scores: it runs only for longer bad words. Equal to transformers' order
        (bad words after log_softmax and the earlier processors), since -inf stays -inf
        through every processor, except after a +inf sequence_bias: with sequence_bias
        on, the processor bans as before."""
        if "bad_words_banned" not in self.proc_names:
            return T.log_softmax(logits, -1), o
        biased = o.sequence_bias_on if "sequence_bias_on" in self.proc_names else False
        early = T.logical_and(o.bad_words_banned, T.logical_not(biased))
        on = T.logical_or(o.bad_words_multi_on, T.logical_and(biased, o.bad_words_on))
        return T.log_softmax_masked(logits, early), o.replace(bad_words_on=on)

    # ---- the prompt and each step's logits

    def start_prompt(self, cache, tokens, mask, prompt_len):
        """Prefills the prompt; returns the cache and the first step's logits when the
        model gives them (prefill_logits: the whole prompt in one pass), else [0, V]
        (the first step runs the last prompt token)."""
        if self.prefill_logits is not None:
            return cache, self.prefill_logits(cache, tokens, mask)
        return cond(T.gt(prompt_len, 1), self._prefill_prompt, keep_cache, cache, tokens, mask), T.zeros([0, self.V])

    def step_logits(self, pending, cache, seq, mask, cur_len):
        """The step's logits: the prefill's for the first step when it gave them (rows
        of `pending`), else a decode step over the last token."""
        pos = T.sub(cur_len, 1)
        tokens = T.slice(seq, 1, pos, cur_len)
        if self.prefill_logits is None:
            return self.model.decode_step(cache, tokens, mask, pos)
        return cond(T.gt(T.size(pending, 0), 0), self._prefilled_logits, self._decoded_logits, pending, cache, tokens,
                    mask, pos)

    def spent(self, pending):
        """`pending` after the first step: no rows (new, so that no view keeps the
        prefill's logits alive through the loop)."""
        return pending if self.prefill_logits is None else T.zeros([0, self.V])

    # ---- rows: what the search hands the model besides tokens and the cache. An
    # encoder-decoder gets its encoder states and source mask, one per sentence. A
    # decoder-only model gets the attention mask over every position up to the length
    # limit, [batch, limit] (the prompt's mask, then ones), as `states`; each row gets
    # its sentence's.

    @staticmethod
    def start_rows(prompt, per_sentence):
        """The prompt of each sentence repeated for its rows (sentence-major)."""
        return T.repeat_interleave(prompt, per_sentence, 0)

    def init_cache(self, states, rows, max_len):
        if self.decoder_only:
            return self.model.init_cache(rows, max_len)
        return self.model.init_cache(states, rows, max_len)

    def rows_mask(self, mask, per_sentence):
        if self.decoder_only:
            return T.repeat_interleave(mask, per_sentence, 0)
        return mask
