"""What the tensorvm-vs-transformers benchmark scripts share: one checkpoint imported
into a program and loaded by transformers, and a median timer."""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def median_s(fn, repeats: int) -> float:
    """Median wall seconds of `repeats` calls, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def padded_sources(rng, batch: int, length: int, pad: int, eos: int):
    """(ids, mask) int64 [batch, length]: sources of varied lengths (the first `length`),
    right-padded, each ending with EOS as the tokenizers' do."""
    import numpy as np

    lens = rng.integers(max(2, length // 2), length + 1, size=batch)
    lens[0] = length
    ids = np.full((batch, length), pad, np.int64)
    mask = np.zeros((batch, length), np.int64)
    for i, n in enumerate(lens):
        ids[i, :n - 1] = rng.integers(2, pad, size=n - 1)
        ids[i, n - 1] = eos
        mask[i, :n] = 1
    return ids, mask


def common_args(doc: str):
    """An ArgumentParser with the options every tensorvm-vs-transformers script takes:
    --checkpoint, --threads, --repeats."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--checkpoint", help="a checkpoint directory (default: the opus-mt-en-fr-shaped fixture)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    return ap


def program_and_model(checkpoint, threads: int, prefix: str):
    """(checkpoint dir, tensorvm Program, transformers MarianMTModel) with `threads` for both;
    without a checkpoint, the opus-mt-en-fr-shaped one from tests/fixtures."""
    import torch
    import transformers
    from transformers import MarianMTModel

    import tensorvm
    from tensorvm.pycompiler.import_hf import import_hf

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(threads)
    if checkpoint:
        ckpt = Path(checkpoint)
    else:
        sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
        from make_checkpoints import ensure_checkpoint

        ckpt = ensure_checkpoint("opus-mt-en-fr-random")
    work = Path(tempfile.mkdtemp(prefix=prefix))
    import_hf(ckpt, work / "model.tvm")
    prog = tensorvm.load(work / "model.tvm", num_threads=threads)
    return ckpt, prog, MarianMTModel.from_pretrained(ckpt).eval()
