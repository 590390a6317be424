"""generate's checks of its inputs and its length default, each written once.

The program's `generate` (entry.py, greedy.py, beam.py) checks its inputs with
T.check as it runs, for every front (the CLI, AOT, C++); Program.generate
(frontend.py) checks the same before anything runs, so that a bad request is a
Python error naming the keyword. Both take the sentence from here; the Python
side appends the values it was given (`got`), which the program's text cannot know.
"""
from __future__ import annotations

import operator

# transformers' max_length when neither the call nor the checkpoint sets one:
# this many tokens after the prompt, within the position table.
DEFAULT_NEW_TOKENS = 20


def default_max_length(prompt_len, max_pos, add=operator.add, minimum=min):
    """DEFAULT_NEW_TOKENS after the prompt, at most max_pos (None: no table): with
    ints in Python, with the program's T.add and T.minimum in generate."""
    limit = add(prompt_len, DEFAULT_NEW_TOKENS)
    return limit if max_pos is None else minimum(limit, max_pos)


def got(message: str, detail) -> str:
    """A check's sentence with what the caller gave."""
    return f"{message}, got {detail}"


def no_rows(name: str) -> str:
    return f"generate: {name} has no rows (an empty batch)"


def no_tokens(what: str) -> str:
    """`what`: "prompt" (decoder-only) or "source"."""
    return f"generate: input_ids has no tokens (a zero-length {what})"


def too_long(what: str, max_pos: int) -> str:
    return f"generate: the {what} is longer than max_position_embeddings ({max_pos})"


def prompt_rows(first: str) -> str:
    return f"generate: decoder_input_ids must have one row per {first} row"


PROMPT_EMPTY = "generate: decoder_input_ids has no tokens"
NEW_TOKENS_POSITIVE = "generate: max_new_tokens must be greater than 0"
LIMIT_AT_LEAST_2 = "generate: max_length must be at least 2 (it counts the decoder start token)"


def limit_after_prompt(what: str) -> str:
    """`what`: the prompt's input, input_ids (decoder-only) or decoder_input_ids."""
    return f"generate: max_length must be greater than the length of {what}"


def past_positions(max_pos: int) -> str:
    return f"generate: max_length (or max_new_tokens + prompt) is past max_position_embeddings ({max_pos})"


def at_least(name: str, low) -> str:
    return f"generate: {name} must be at least {low}"


NOT_NAN = "a number, not NaN"


def must_be(name: str, what: str) -> str:
    return f"generate: {name} must be {what}"


GREEDY_ONE_SEQUENCE = ("generate: greedy search (num_beams=1, do_sample=False) returns one sequence per input: "
                       "num_return_sequences must be 1")
RETURN_AT_MOST_BEAMS = "generate: num_return_sequences must be at most num_beams"

# speculative decoding (speculative.py): one sequence, as transformers' assisted generation
SPECULATIVE_BATCH = ("generate: prompt_lookup_num_tokens / use_draft (speculative decoding) takes one input sequence "
                     "(batch size 1, as transformers' assisted generation); call generate once per sequence")
SPECULATIVE_BEAMS = "generate: prompt_lookup_num_tokens / use_draft (speculative decoding) needs num_beams=1"
SPECULATIVE_RETURN = "generate: prompt_lookup_num_tokens / use_draft (speculative decoding) needs num_return_sequences=1"
LOOKUP_POSITIVE = "generate: prompt_lookup_num_tokens must be at least 1 (None: off)"
NGRAM_POSITIVE = "generate: max_matching_ngram_size must be at least 1"
NO_DECODE_BLOCK = ("generate: prompt_lookup_num_tokens and use_draft are not supported by this program: its model "
                   "gives no decode_block (the verify pass over several positions)")
NO_DRAFT = ("generate: use_draft=True needs a program with a draft model (tensorvm import-hf CKPT --draft int4, or "
            "--draft-model CKPT2)")
DRAFT_OR_LOOKUP = "generate: use_draft and prompt_lookup_num_tokens are two ways to propose candidates: pick one"
