"""Shared by the decoder-only parity tests: fixtures imported once per session, the
transformers model of each, and left-padded prompt batches."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
if str(_FIXTURES) not in sys.path:
    sys.path.insert(0, str(_FIXTURES))

import random_checkpoints as decoder_checkpoints  # noqa: E402

NAMES = (*decoder_checkpoints.DECODER_ONLY, *decoder_checkpoints.COMMITTED)
MODEL_CLASS = {**{n: c[0] for n, c in decoder_checkpoints.CONFIGS.items()}, "tiny-llama": "LlamaForCausalLM"}



def checkpoint(name: str) -> Path:
    return decoder_checkpoints.ensure(name)


@functools.lru_cache(maxsize=None)
def hf_model(name: str):
    import transformers

    model_class = MODEL_CLASS[name]
    model = getattr(transformers, model_class).from_pretrained(checkpoint(name), attn_implementation="eager")
    model.eval()
    return model


def left_padded(prompts, pad: int):
    """(ids, mask) int64 [batch, longest] with each prompt right-aligned, as a
    tokenizer with padding_side="left" makes them."""
    n = max(len(p) for p in prompts)
    ids = np.full((len(prompts), n), pad, np.int64)
    mask = np.zeros((len(prompts), n), np.int64)
    for i, p in enumerate(prompts):
        ids[i, n - len(p):] = p
        mask[i, n - len(p):] = 1
    return ids, mask


def hf_position_ids(mask):
    """transformers' generate: cumsum(mask) - 1, padded slots 0."""
    return np.where(mask == 0, 0, np.cumsum(mask, 1) - 1)


def random_prompts(rng, vocab: int, lengths, avoid=()):
    """Prompts of the given lengths with tokens drawn from [3, vocab) minus `avoid`."""
    choices = np.array([t for t in range(3, vocab) if t not in set(avoid)])
    return [list(rng.choice(choices, size=n)) for n in lengths]
