"""The interface every benchmark engine implements, and the generation contract.

Generation contract (what ``Engine.generate`` must return)
---------------------------------------------------------
``generate(ids, mask, num_beams, max_new_tokens, min_new_tokens=None)`` returns an
``np.int64`` array ``[B, T]`` in transformers' format: column 0 is the decoder
start token, then the generated tokens, and ``pad_token_id`` after EOS.

Decoding follows ``MarianMTModel.generate()`` with the checkpoint's
``generation_config.json`` (Marian's defaults: ``bad_words_ids=[[pad]]``,
``forced_eos_token_id=eos`` at ``max_length``, ``renormalize_logits=True``,
``length_penalty=1.0``, ``early_stopping=False``), ``do_sample=False`` and the
given ``num_beams`` / ``max_new_tokens`` / ``min_new_tokens``.

The benchmark fixes the amount of work by passing
``min_new_tokens == max_new_tokens`` to every engine: EOS is suppressed until the
last step, where Marian's forced-EOS processor makes it the last token. Every
sequence therefore has exactly ``max_new_tokens`` new tokens, the last one EOS.

Timing contract
---------------
``load`` returns its own wall time in seconds (imports happen before, one-off
conversions/exports happen in ``prepare``, which is not timed as load).
``encode`` runs the encoder alone (no decoder work); engines that cannot run
their encoder alone set ``encode_is_separate = False`` and the harness derives an
estimate (see compare.py).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class EngineUnavailable(RuntimeError):
    """The engine cannot run here (package missing, not implemented yet, ...)."""


@dataclass(frozen=True)
class MarianIds:
    """The special token ids of a Marian checkpoint (from config.json)."""

    pad: int
    eos: int
    decoder_start: int
    vocab_size: int
    unk: int = 1

    @classmethod
    def from_checkpoint(cls, checkpoint_dir: str | Path) -> "MarianIds":
        cfg = json.loads((Path(checkpoint_dir) / "config.json").read_text())
        gen_path = Path(checkpoint_dir) / "generation_config.json"
        gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}
        pad = gen.get("pad_token_id", cfg["pad_token_id"])
        return cls(
            pad=pad,
            eos=gen.get("eos_token_id", cfg["eos_token_id"]),
            decoder_start=gen.get("decoder_start_token_id", cfg.get("decoder_start_token_id", pad)),
            vocab_size=cfg.get("decoder_vocab_size") or cfg["vocab_size"],
        )


def generation_defaults(checkpoint_dir: str | Path) -> dict:
    """The parts of generation_config.json an engine re-implementing the loop needs."""
    p = Path(checkpoint_dir) / "generation_config.json"
    gen = json.loads(p.read_text()) if p.exists() else {}
    ids = MarianIds.from_checkpoint(checkpoint_dir)
    return {
        "bad_words_ids": gen.get("bad_words_ids", [[ids.pad]]),
        "forced_eos_token_id": gen.get("forced_eos_token_id", ids.eos),
        "renormalize_logits": gen.get("renormalize_logits", True),
        "length_penalty": gen.get("length_penalty", 1.0),
        "early_stopping": gen.get("early_stopping", False),
    }


class Engine:
    """Base class. Subclasses set ``name`` and implement load / encode / generate."""

    name: str = "?"
    precision: str = "float32"  # "float32" rows must match transformers exactly
    encode_is_separate: bool = True  # False: encoder time is derived by the harness
    decode_steps_offset: int = 0  # decoder steps actually run = max_new_tokens + offset

    def interpreter(self, cache_root: Path) -> str:
        """The Python that runs this engine's prepare and worker processes (an engine
        needing its own virtual environment makes it here, or raises EngineUnavailable)."""
        return sys.executable

    def supports(self, batch: int, num_beams: int) -> str | None:
        """None, or why the engine cannot run that case (the harness then skips it)."""
        return None

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        """One-off, untimed work (conversion, export) into ``cache_dir``.

        Runs in its own process before the timed worker; may import torch.
        Returns notes for the report (e.g. {"convert_s": 12.3})."""
        return {}

    def imports(self) -> None:
        """Import the engine's runtime modules (the worker measures RSS after this, before load)."""

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        raise NotImplementedError

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> None:
        raise NotImplementedError

    def generate(
        self,
        ids: np.ndarray,
        mask: np.ndarray,
        num_beams: int,
        max_new_tokens: int,
        min_new_tokens: int | None = None,
    ) -> np.ndarray:
        raise NotImplementedError

    def info(self) -> dict:
        """Versions and settings, for the report."""
        return {}

    def close(self) -> None:
        pass


def pad_after_eos(seqs: np.ndarray, eos: int, pad: int) -> np.ndarray:
    """Replace everything after the first EOS of each row (column >= 1) by pad."""
    out = seqs.copy()
    for row in out:
        hits = np.nonzero(row[1:] == eos)[0]
        if hits.size:
            row[hits[0] + 2 :] = pad
    return out
