"""Shared by the decoder-only parity tests: fixtures imported once per session, the
transformers model of each, and left-padded prompt batches."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

from tensorvm.testing import left_padded  # noqa: F401 -- re-exported: the parity tests take it from here

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


def hf_position_ids(mask):
    """transformers' generate: cumsum(mask) - 1, padded slots 0."""
    return np.where(mask == 0, 0, np.cumsum(mask, 1) - 1)


def random_prompts(rng, vocab: int, lengths, avoid=()):
    """Prompts of the given lengths with tokens drawn from [3, vocab) minus `avoid`."""
    choices = np.array([t for t in range(3, vocab) if t not in set(avoid)])
    return [list(rng.choice(choices, size=n)) for n in lengths]
