"""Imported Marian programs for the parity tests, built once per test session."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import tensorvm
from tensorvm.pycompiler.import_hf import import_hf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf_reference as hf  # noqa: E402

_cache: dict = {}


def imported(name: str, root: Path) -> tuple[Path, "tensorvm.Program"]:
    """(checkpoint dir, loaded program) for a checkpoint of make_checkpoints.SPECS."""
    if name not in _cache:
        ckpt = hf.checkpoint_dir(name)
        out = root / f"{name}.tvm"
        import_hf(ckpt, out)
        _cache[name] = (ckpt, tensorvm.load(out))
    return _cache[name]


def random_sources(rng, n: int, vocab_low: int, vocab_high: int, max_len: int, batch: int, pad: int, eos: int):
    """n batches of `batch` sources of varied lengths, padded; each source ends with EOS as a tokenizer's do."""
    out = []
    for _ in range(n):
        rows = [list(rng.integers(vocab_low, vocab_high, size=int(rng.integers(1, max_len)))) + [eos]
                for _ in range(batch)]
        ids, mask = _pad(rows, pad)
        out.append((ids, mask))
    return out


def _pad(rows, pad):
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad, np.int64)
    mask = np.zeros((len(rows), width), np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask
