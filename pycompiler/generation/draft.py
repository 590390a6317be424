"""The draft model's functions as the speculative search calls them.

A program may carry a second, smaller or lower-bit model of the same vocabulary that
proposes candidates (`tensorvm import-hf CKPT --draft int4`, or `--draft-model CKPT2`;
importers/draft.py). The search is traced before the draft exists, so it calls these
stubs, which by default run the target itself (a correct if useless draft) and report
`draft_present() == False`, so that `use_draft=True` is refused. The importer then
replaces each stub's body with a call to the draft program's function of the same
role (merged into the program under the prefix `draft__`, its weights under `draft.`).

    draft_present() -> bool
    draft_encode(input_ids, attention_mask) -> encoder states     (encoder-decoders)
    draft_source_mask(attention_mask) -> source mask               (encoder-decoders)
    draft_init_cache(states, rows, max_len) -> KVCache             (decoder-only: (rows, max_len))
    draft_decode_block(cache, tokens [rows, n], mask, position) -> logits [rows, n, vocab]
"""
from __future__ import annotations

from .. import ops as T
from ..types import ObjectType, Tensor

KVCache = ObjectType("KVCache")
PREFIX = "draft__"      # the draft program's functions in the merged program
WEIGHTS = "draft."      # and its weights
PRESENT = "draft_present"


def stub_roles(decoder_only: bool) -> tuple:
    """The draft functions a program's search calls, by the model function they stand for."""
    return ("init_cache", "decode_block") if decoder_only else ("encode", "source_mask", "init_cache", "decode_block")


class Draft:
    """The stubs of one program (made once, while generate is built)."""

    def __init__(self, pb, model, decoder_only: bool):
        self.decoder_only = decoder_only

        @pb.function
        def draft_present() -> bool:
            """Whether the program carries a draft model (the importer's merge makes this True)."""
            return T.eq(0, 1)

        @pb.function
        def draft_decode_block(cache: KVCache, tokens: Tensor, mask: Tensor, position: int) -> Tensor:
            """The draft's logits [rows, n, vocab] for tokens [rows, n] at [position, position + n)."""
            return model.decode_block(cache, tokens, mask, position)

        if decoder_only:
            @pb.function
            def draft_init_cache(rows: int, max_len: int) -> KVCache:
                """The draft's cache."""
                return model.init_cache(rows, max_len)
        else:
            @pb.function
            def draft_init_cache(encoder_states: Tensor, rows: int, max_len: int) -> KVCache:
                """The draft's cache, with its cross-attention K/V of its own encoder states."""
                return model.init_cache(encoder_states, rows, max_len)

            @pb.function
            def draft_encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
                """The draft's encoder over the source (its own: the draft's width may differ)."""
                return model.encode(input_ids, attention_mask)

            @pb.function
            def draft_source_mask(attention_mask: Tensor) -> Tensor:
                return model.source_mask(attention_mask)

            self.encode, self.source_mask = draft_encode, draft_source_mask
        self.present, self.decode_block, self.init_cache = draft_present, draft_decode_block, draft_init_cache
