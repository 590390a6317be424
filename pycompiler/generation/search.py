"""transformers' generate() written once as program functions over a model interface.

    build_generation(pb, model, defaults) adds `generate` and its search functions to
    the ProgramBuilder `pb`, around the model's functions (model.py): the processor
    chain (chain.py), greedy search and sampling (greedy.py), beam search (beam.py)
    and the entry that checks and resolves the inputs (entry.py), over what they
    share (context.py). This module declares the search's own inputs.

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

from . import end_tokens
from . import processors as P
from .beam import beam_search_function
from .context import Search
from .entry import generate_function
from .greedy import sample_search_function
from .draft import Draft
from .speculative import speculative_search_function
from .inputs import NO_DEFAULT, Input, bool_input, choice_input, float_input, int_input, seed_input

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
# speculative decoding (speculative.py), last so that positional callers keep their places
SPECULATION = (
    int_input("prompt_lookup_num_tokens", 1, "prompt-lookup decoding: candidates per verify pass (None: off)", None),
    int_input("max_matching_ngram_size", 1, "prompt-lookup decoding: the longest n-gram looked up", None),
    bool_input("use_draft", "speculative decoding with the program's draft model (import-hf --draft / --draft-model)",
               False),
    int_input("num_assistant_tokens", 1, "speculative decoding: the draft's candidates per pass (the first pass's, "
              "with the heuristic schedule)", 20),
    choice_input("num_assistant_tokens_schedule", ("constant", "heuristic", "heuristic_transient"),
                 "speculative decoding: k fixed, or + 2 after a pass that kept every candidate and - 1 otherwise "
                 "(both heuristics start each call afresh)", "constant"),
)


def generate_inputs(decoder_only: bool = False) -> tuple:
    """generate's inputs after input_ids and attention_mask, in order (Input objects);
    a decoder-only model's prompt is input_ids itself, so it has no decoder_input_ids."""
    return (*SEARCH_HEAD, *P.runtime_inputs(), *SEARCH_TAIL, *(() if decoder_only else (PROMPT,)), *SPECULATION)


def generation_config_defaults() -> dict:
    """transformers' global default of every generate input that is a generation_config
    field (the importer reads the checkpoint's value of each)."""
    return {i.name: i.default for i in generate_inputs() if i.default is not NO_DEFAULT}


def input_names(decoder_only: bool = False) -> tuple:
    """generate's parameter names after input_ids."""
    return ("attention_mask", *(i.name for i in generate_inputs(decoder_only)))


def build_generation(pb, model, defaults: dict):
    """Adds generate(input_ids, attention_mask, ..., decoder_input_ids) to `pb` for
    `model` (an EncoderDecoder or a DecoderOnly). `defaults`: the checkpoint's
    generation defaults by transformers' names (generation_config over transformers'
    global defaults). The functions are registered in this order: the processor chain
    (`process`), the searches, then `generate`."""
    s = Search(pb, model, {**generation_config_defaults(), **defaults})
    sample_search = sample_search_function(s)
    beam_search = beam_search_function(s)
    speculative = None
    if s.model.decode_block is not None:
        draft = Draft(pb, s.model, s.decoder_only)
        speculative = speculative_search_function(s, draft), draft
    return generate_function(s, input_names(s.decoder_only), sample_search, beam_search, speculative)
