"""Hugging Face reference results for parity tests (numpy in, numpy out).

Loads a local checkpoint with ``MarianMTModel.from_pretrained`` (eval mode,
cached per directory) and runs ``generate()`` / the forward pass under
``torch.no_grad()``. Token arrays are int64, float arrays float32.

    greedy(ckpt, ids, mask)                 -> sequences [B, T]
    beam(ckpt, ids, mask, num_beams=4)      -> sequences [B*n, T]
    generate(ckpt, ids, mask, with_scores=True, **gen_kwargs) -> dict
    next_token_logits(ckpt, ids, prefix, mask, k) -> [B, k, V]
    encoder_output(ckpt, ids, mask)         -> [B, S, d_model]
    pad_batch([[...], ...], pad_id)         -> (ids, mask), EOS appended

Checkpoints come from tests/fixtures/make_checkpoints.py; ``ckpt`` may be a
directory or a checkpoint name (``ensure_checkpoint``: trained ones are the
committed copies in tests/fixtures/data, random ones are built on demand).
Always pass ``attention_mask`` for padded batches: transformers 5.x does not
infer it from pad tokens for encoder-decoder models (HF_GENERATE_NOTES.md).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import numpy as np
import torch

THREADS = int(os.environ.get("TENSORVM_HF_THREADS", "2"))
torch.set_num_threads(THREADS)

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def checkpoint_dir(ckpt: str | os.PathLike) -> Path:
    """A directory as is, or a name from make_checkpoints.SPECS (committed, or built if needed)."""
    p = Path(ckpt)
    if p.is_dir():
        return p
    if str(_FIXTURES) not in sys.path:
        sys.path.insert(0, str(_FIXTURES))
    from make_checkpoints import ensure_checkpoint

    return ensure_checkpoint(str(ckpt))


@functools.lru_cache(maxsize=4)
def _load(path: str, attn_implementation: str | None):
    from transformers import MarianMTModel

    kw = {"attn_implementation": attn_implementation} if attn_implementation else {}
    model = MarianMTModel.from_pretrained(path, **kw)
    model.eval()
    return model


def load_model(ckpt, attn_implementation: str | None = None):
    """The MarianMTModel for ``ckpt`` (default attention: transformers' choice, sdpa on CPU)."""
    return _load(str(checkpoint_dir(ckpt).resolve()), attn_implementation)


def _t(a, dtype=torch.long):
    return None if a is None else torch.as_tensor(np.asarray(a), dtype=dtype)


def pad_batch(seqs, pad_id: int, eos_id: int = 0, append_eos: bool = True):
    """Right-pad token lists (EOS appended, as MarianTokenizer does) -> (ids, mask) int64."""
    seqs = [list(s) + ([eos_id] if append_eos else []) for s in seqs]
    n = max(len(s) for s in seqs)
    ids = np.full((len(seqs), n), pad_id, dtype=np.int64)
    mask = np.zeros((len(seqs), n), dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return ids, mask


def generate(ckpt, input_ids, attention_mask=None, *, with_scores: bool = False, attn_implementation=None, **gen_kwargs):
    """``model.generate`` with the checkpoint's generation_config, overridden by
    ``gen_kwargs`` (num_beams, max_new_tokens, max_length, num_return_sequences,
    length_penalty, early_stopping, ...). Returns {"sequences": int64 [N, T]} and,
    if ``with_scores``: "scores" float32 [steps, N', V] (processed scores: raw
    logits after processors for greedy, processed log-probs per running beam for
    beam search), "logits" (raw logits, same layout) and for beam search
    "sequences_scores" float32 [N] and "beam_indices" int64 [N, steps]."""
    model = load_model(ckpt, attn_implementation)
    ids = _t(input_ids)
    mask = _t(attention_mask) if attention_mask is not None else torch.ones_like(ids)
    if with_scores:
        gen_kwargs.update(return_dict_in_generate=True, output_scores=True, output_logits=True)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, **gen_kwargs)
    if not with_scores:
        return {"sequences": out.cpu().numpy().astype(np.int64)}
    res = {"sequences": out.sequences.cpu().numpy().astype(np.int64)}
    res["scores"] = torch.stack(out.scores).float().cpu().numpy()
    res["logits"] = torch.stack(out.logits).float().cpu().numpy()
    if getattr(out, "sequences_scores", None) is not None:
        res["sequences_scores"] = out.sequences_scores.float().cpu().numpy()
        res["beam_indices"] = out.beam_indices.cpu().numpy().astype(np.int64)
    return res


def greedy(ckpt, input_ids, attention_mask=None, **gen_kwargs) -> np.ndarray:
    return generate(ckpt, input_ids, attention_mask, num_beams=1, **gen_kwargs)["sequences"]


def beam(ckpt, input_ids, attention_mask=None, num_beams: int = 4, with_scores: bool = False, **gen_kwargs):
    """Sequences [B*num_return_sequences, T]; with_scores -> (sequences, sequences_scores)."""
    res = generate(ckpt, input_ids, attention_mask, num_beams=num_beams, with_scores=with_scores, **gen_kwargs)
    return (res["sequences"], res["sequences_scores"]) if with_scores else res["sequences"]


def next_token_logits(ckpt, input_ids, decoder_prefix, attention_mask=None, k: int | None = None, attn_implementation=None):
    """Teacher-forced raw logits (lm_head + final_logits_bias, no processors):
    out[:, j] is the distribution of the token following decoder_prefix[:, :j+1].
    ``decoder_prefix`` must start with decoder_start_token_id. Returns the first
    ``k`` steps (all if None), float32 [B, k, V]."""
    model = load_model(ckpt, attn_implementation)
    ids = _t(input_ids)
    mask = _t(attention_mask) if attention_mask is not None else torch.ones_like(ids)
    dec = _t(decoder_prefix)
    if dec.ndim == 1:
        dec = dec[None].expand(ids.shape[0], -1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits
    if k is not None:
        logits = logits[:, :k]
    return logits.float().cpu().numpy()


def encoder_output(ckpt, input_ids, attention_mask=None, attn_implementation=None) -> np.ndarray:
    model = load_model(ckpt, attn_implementation)
    ids = _t(input_ids)
    mask = _t(attention_mask) if attention_mask is not None else torch.ones_like(ids)
    with torch.no_grad():
        h = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    return h.float().cpu().numpy()
