"""The small interface a model hands the generation library.

A model file (pycompiler/models/*.py) builds its network as program functions and
passes them here; search.build_generation then writes `generate` around them.
Every callable is a ProgramFunction of the same ProgramBuilder (or plain Python
traced inline), with these signatures:

Encoder-decoder (EncoderDecoder):
    encode(input_ids, attention_mask) -> encoder states [batch, source_len, d]
        (input_features instead of input_ids when encoder_input says so: Whisper)
    source_mask(attention_mask) -> the mask prefill/decode_step take
    init_cache(encoder_states, rows, max_len) -> cache: self-attention room for
        `rows` decoder rows (batch x beams, sentence-major) and max_len positions,
        cross-attention K/V of every layer computed once per sentence
    prefill(cache, tokens [rows, n], source_mask) -> cache: runs positions [0, n)
        through the decoder in one pass (causal within the prompt), filling the
        self-attention cache; its logits are not needed
    decode_step(cache, tokens [rows, 1], source_mask, position) -> logits [rows, vocab]
    reorder(cache, index [rows]) -> cache: row r continues old row index[r]
    decode_block (optional): (cache, tokens [rows, n], source_mask, position) -> logits
        [rows, n, vocab] of positions [position, position + n), causal among themselves
        over the cached ones, each appended to the cache (speculative decoding's verify
        pass; without it the program refuses prompt_lookup_num_tokens)

Decoder-only (DecoderOnly, for the decoder-only models that build on this):
    init_cache(rows, max_len) -> cache
    prefill(cache, tokens [rows, n], attention_mask) -> cache
    decode_step(cache, tokens [rows, 1], attention_mask, position) -> logits [rows, vocab]
    reorder(cache, index [rows]) -> cache
    prefill_logits (optional): (cache, tokens [rows, n], attention_mask) -> logits [rows,
        vocab] of position n - 1, the cache filled for slots [0, n) as prefill fills it.
        With it the whole prompt is one pass and the first token needs no decode_step
        (a pass over every weight for one row, as long as a decode step).
    decode_block (optional): (cache, tokens [rows, n], attention_mask, position) -> logits
        [rows, n, vocab] of slots [position, position + n), as the encoder-decoder's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from .end_tokens import normalize


@dataclass(frozen=True)
class TokenIds:
    """The special token ids the search needs, and the decoder vocabulary size.

    eos: one end token or several (Llama 3 ships several); kept as a tuple, a row
    ends on any of them. Where transformers uses one (the fill of finished beams
    when pad is 0), it is the first. generate's eos_token_id input replaces them
    for one call."""
    eos: Union[int, tuple]
    pad: int
    vocab_size: int
    decoder_start: Optional[int] = None  # encoder-decoders: the first decoder token

    def __post_init__(self):
        object.__setattr__(self, "eos", normalize(self.eos))


ENCODER_INPUTS = ("input_ids", "input_features")


@dataclass(frozen=True)
class EncoderDecoder:
    encode: Callable
    source_mask: Callable
    init_cache: Callable
    prefill: Callable
    decode_step: Callable
    reorder: Callable
    ids: TokenIds
    max_positions: int  # longest source and decoder length (max_position_embeddings)
    # generate's first input, named as transformers names the encoder's input:
    # "input_ids" (token ids [batch, source_len], checked against max_positions) or
    # "input_features" (f32 [batch, ...], e.g. Whisper's log-mel frames; encode checks
    # their shape; the attention_mask default is ones [batch, last dim])
    encoder_input: str = "input_ids"
    decode_block: Optional[Callable] = None

    def __post_init__(self):
        if self.encoder_input not in ENCODER_INPUTS:
            raise ValueError(f"EncoderDecoder: encoder_input must be one of {ENCODER_INPUTS}, "
                             f"got {self.encoder_input!r}")


@dataclass(frozen=True)
class DecoderOnly:
    init_cache: Callable
    prefill: Callable
    decode_step: Callable
    reorder: Callable
    ids: TokenIds
    max_positions: int
    prefill_logits: Optional[Callable] = None
    decode_block: Optional[Callable] = None
