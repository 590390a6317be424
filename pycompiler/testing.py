"""Parity with transformers, for whoever adds an architecture (tensorvm.testing):

    from tensorvm.testing import compare_generate
    result = compare_generate("pythia-ckpt/", "pythia.tvm", [[5, 9, 3], [7, 2]], max_new_tokens=12, num_beams=4)
    assert result.ok, result      # str(result): the first differing token and the score gaps

runs transformers' own generate (the checkpoint loaded by its architecture's
model_class, eager attention) and the program's on the same left-padded batch, and
compares the sequences token by token and the scores (per step, and beam search's
sequences_scores). Needs torch and transformers (pip install 'tensorvm[import]').
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Comparison:
    """What compare_generate found. `first_difference`: (row, position, transformers'
    token, the program's) of the first differing token (position in the returned
    sequence, prompt included), None when the sequences are equal. `score_gap`: the
    largest |difference| of the per-step scores at the steps before it (finite in both;
    inf where one is -inf and the other not), and `score_scale` the largest finite
    |score| there; `sequences_score_gap`: of beam search's sequences_scores (0 without beams). `margin` (greedy): at the first difference,
    transformers' score of its token minus its score of the program's (small: a near-tie)."""
    want: np.ndarray
    got: np.ndarray
    first_difference: tuple | None = None
    score_gap: float = 0.0
    score_scale: float = 0.0
    sequences_score_gap: float = 0.0
    margin: float | None = None
    rtol: float = 1e-4
    options: dict = field(default_factory=dict)

    @property
    def tolerance(self) -> float:
        """rtol times the largest score (at least 1): float32 sums in another order differ
        in proportion to their size."""
        return self.rtol * max(1.0, self.score_scale)

    @property
    def ok(self) -> bool:
        """Token-exact, and every score within tolerance."""
        return self.first_difference is None and max(self.score_gap, self.sequences_score_gap) <= self.tolerance

    def __str__(self) -> str:
        head = f"compare_generate({self.options}): "
        if self.first_difference is None:
            head += "token-exact"
        else:
            row, pos, want, got = self.first_difference
            head += (f"row {row} differs first at position {pos}: transformers {want}, program {got}"
                     + ("" if self.margin is None else f" (transformers' margin {self.margin:.3g})"))
        return (head + f"; score gap {self.score_gap:.3g}, sequences_scores gap {self.sequences_score_gap:.3g} "
                f"(tolerance {self.tolerance:.3g})\ntransformers: {self.want.tolist()}\nprogram:      {self.got.tolist()}")


def left_padded(prompts, pad: int):
    """(ids, mask) int64 [batch, longest], each prompt right-aligned (padding_side="left")."""
    n = max(len(p) for p in prompts)
    ids = np.full((len(prompts), n), pad, np.int64)
    mask = np.zeros((len(prompts), n), np.int64)
    for i, p in enumerate(prompts):
        ids[i, n - len(p):] = p
        mask[i, n - len(p):] = 1
    return ids, mask


@functools.lru_cache(maxsize=4)
def _reference(path: str, model_type: str):
    import transformers

    from .importers import architecture

    model = getattr(transformers, architecture(model_type).model_class).from_pretrained(
        path, attn_implementation="eager")
    return model.eval()


def compare_generate(checkpoint_dir, program, prompts, *, reference=None, rtol: float = 1e-4,
                     **options) -> Comparison:
    """Runs transformers' generate and `program`'s (a Program or a program directory) on
    `prompts`: token-id lists (left-padded with the program's pad_token_id) or an
    (input_ids, attention_mask) pair. `options` are generate's keywords for both
    (max_new_tokens, num_beams, num_return_sequences, ...; greedy unless do_sample).
    `reference`: the transformers model, when the caller has it loaded already."""
    import torch

    from .program import Program, load

    prog = program if isinstance(program, Program) else load(program)
    pad = prog.meta["pad_token_id"]
    ids, mask = prompts if isinstance(prompts, tuple) else left_padded(prompts, pad)
    ids, mask = np.asarray(ids, np.int64), np.asarray(mask, np.int64)
    model = reference if reference is not None else _reference(str(Path(checkpoint_dir).resolve()),
                                                               prog.meta["model_type"])
    options = {"do_sample": False, **options}
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), pad_token_id=pad,
                             output_scores=True, return_dict_in_generate=True, **options)
    out = prog.generate(ids, mask, output_scores=True, **options)
    result = Comparison(ref.sequences.numpy(), np.asarray(out.sequences), rtol=rtol, options=options)
    want_scores = [s.float().numpy() for s in ref.scores]
    prompt_len = result.want.shape[1] - len(want_scores)  # decoder-only: the prompt; else the start token
    step = _first_difference(result)
    step = len(want_scores) if step is None else step - prompt_len
    result.score_gap, result.score_scale = _score_gap(want_scores[:step], [np.asarray(g) for g in out.scores])
    if result.first_difference is not None and options.get("num_beams", 1) == 1 and 0 <= step < len(want_scores):
        r, _, w, g = result.first_difference
        result.margin = float(want_scores[step][r, w] - want_scores[step][r, g])
    if getattr(ref, "sequences_scores", None) is not None and getattr(out, "sequences_scores", None) is not None:
        want_s, got_s = ref.sequences_scores.float().numpy(), np.asarray(out.sequences_scores)
        result.sequences_score_gap = float(np.abs(want_s - got_s).max()) if want_s.shape == got_s.shape \
            else float("inf")
    return result


def _first_difference(result: Comparison):
    """Sets result.first_difference; returns its position (None when token-exact)."""
    want, got = result.want, result.got
    if want.shape[0] != got.shape[0]:
        result.first_difference = (0, 0, None, None)
        return 0
    n = min(want.shape[1], got.shape[1])
    differs = np.nonzero((want[:, :n] != got[:, :n]).any(axis=0))[0]
    if len(differs):
        pos = int(differs[0])
        row = int(np.nonzero(want[:, pos] != got[:, pos])[0][0])
        result.first_difference = (row, pos, int(want[row, pos]), int(got[row, pos]))
        return pos
    if want.shape != got.shape:  # one side ran longer
        result.first_difference = (0, n, None, None)
        return n
    return None


def _score_gap(want_scores, got_scores) -> tuple:
    """(the largest |difference| of the per-step scores, inf where the -inf patterns
    differ; the largest finite |score| of transformers')."""
    gap = scale = 0.0
    for want, got in zip(want_scores, got_scores):
        if got.shape != want.shape or (np.isfinite(got) != np.isfinite(want)).any():
            return float("inf"), scale
        finite = np.isfinite(want)
        if finite.any():
            gap = max(gap, float(np.abs(got[finite] - want[finite]).max()))
            scale = max(scale, float(np.abs(want[finite]).max()))
    return gap, scale
