"""Comparing a program's generate with transformers' generate (sequences and scores).

compare(ckpt, prog, batches, **options) runs both on every (ids, mask) batch and
returns the number of rows accepted only because of a tie (see `_tie_ok`); it fails
on any other difference. Scores are compared within SCORE_TOL.
"""
from __future__ import annotations

import numpy as np

from marian_fixtures import hf, random_sources
from tensorvm.pycompiler.generation import generate

SCORE_TOL = 1e-4
# What a test session compared (printed by the suites' report tests).
STATS = {"generate calls": 0, "rows": 0, "max sequences_scores diff": 0.0, "max scores diff": 0.0}
# Two finished hypotheses of one sentence whose scores are this close are a tie in
# float32 (they come from sums of ~10 log-probs, each a few ulps from torch's).
TIE = 2e-5


def _rows(seq: np.ndarray, pad: int) -> list[tuple]:
    """Each row without its trailing padding (the width of a batch follows its longest row)."""
    out = []
    for r in seq.tolist():
        while len(r) > 1 and r[-1] == pad:
            r = r[:-1]
        out.append(tuple(r))
    return out


def _tie_ok(b: int, n: int, want_rows, got_rows, want_scores, got_scores) -> bool:
    """Sentence b's returned hypotheses differ only where scores tie within TIE (two
    hypotheses swapped, or another hypothesis of the same score chosen): accept."""
    ws, gs = want_scores[b * n:(b + 1) * n], got_scores[b * n:(b + 1) * n]
    if not np.allclose(np.sort(ws), np.sort(gs), atol=SCORE_TOL, rtol=0):
        return False
    for i in range(n):
        if want_rows[b * n + i] == got_rows[b * n + i]:
            continue
        others = np.abs(ws - ws[i]) < TIE
        others[i] = False
        if not (abs(ws[i] - gs[i]) < TIE or others.any()):
            return False
    return True


def source_batches(prog, seed, batch, count, max_len=12):
    """`count` random batches of `batch` padded sources (lengths 2..max_len) for `prog`'s vocabulary."""
    pad, eos = prog.meta["pad_token_id"], prog.meta["eos_token_id"]
    eos = eos[0] if isinstance(eos, list) else eos  # several end tokens: sources end with the first
    return random_sources(np.random.default_rng(seed), count, 2, pad, max_len, batch, pad, eos)


def compare(ckpt, prog, batches, *, scores: bool = False, **options) -> int:
    """Token-exact sequences; sequences_scores (beam search) within SCORE_TOL; with
    scores=True also the per-step processed scores (same -inf pattern, finite values
    within SCORE_TOL). Returns the number of tied rows accepted."""
    pad = prog.meta["pad_token_id"]
    beams = options.get("num_beams", prog.meta.get("num_beams", 1))
    n = options.get("num_return_sequences", 1)
    ties = 0
    for ids, mask in batches:
        want = hf.generate(ckpt, ids, mask, with_scores=True, **options)
        got = generate(prog, ids, mask, output_scores=True, **options)
        where = f"options {options}, input {ids.tolist()}"
        STATS["generate calls"] += 1
        STATS["rows"] += int(got.sequences.shape[0])
        if beams > 1 and got.sequences_scores.shape == want["sequences_scores"].shape:
            STATS["max sequences_scores diff"] = max(STATS["max sequences_scores diff"], float(
                np.abs(got.sequences_scores - want["sequences_scores"]).max()))
        if beams > 1:
            np.testing.assert_allclose(got.sequences_scores, want["sequences_scores"], atol=SCORE_TOL, rtol=0,
                                       err_msg=where)
        if got.sequences.shape == want["sequences"].shape and (got.sequences == want["sequences"]).all():
            if scores:
                _compare_scores(want["scores"], np.stack(got.scores), where)
            continue
        want_rows, got_rows = _rows(want["sequences"], pad), _rows(got.sequences, pad)
        assert beams > 1 and len(want_rows) == len(got_rows), f"sequences differ: {where}\n{want['sequences']}\n" \
                                                              f"{got.sequences}"
        for b in range(len(want_rows) // n):
            if want_rows[b * n:(b + 1) * n] != got_rows[b * n:(b + 1) * n]:
                assert _tie_ok(b, n, want_rows, got_rows, want["sequences_scores"], got.sequences_scores), \
                    f"sequences differ (not a tie): {where}\n{want['sequences']}\n{got.sequences}\n" \
                    f"{want['sequences_scores']}\n{got.sequences_scores}"
                ties += 1
    return ties


def _compare_scores(want: np.ndarray, got: np.ndarray, where: str) -> None:
    assert want.shape == got.shape, f"scores shape {got.shape} != {want.shape}: {where}"
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=f"-inf pattern: {where}")
    if finite.any():
        STATS["max scores diff"] = max(STATS["max scores diff"], float(np.abs(got[finite] - want[finite]).max()))
    np.testing.assert_allclose(got[finite], want[finite], atol=SCORE_TOL, rtol=0, err_msg=where)


def logits_tol(logits) -> float:
    """1e-4 of the largest finite logit: float32 sums in another order (transformers' own
    float32 logits are 1e-4 from its float64 ones on T5's gated checkpoint, whose logits reach 10)."""
    return 1e-4 * max(1.0, float(np.abs(logits[np.isfinite(logits)]).max()))


def assert_encoder_states(prog, model, ids, mask, atol=None) -> None:
    """An encoder-decoder program's encode equals the transformers model's encoder at the
    real (unmasked) positions, within atol (default: logits_tol of the reference)."""
    import torch

    with torch.no_grad():
        ref = model.get_encoder()(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    got = prog.run("encode", ids, mask)
    real = mask == 1
    tol = logits_tol(ref.numpy()) if atol is None else atol
    np.testing.assert_allclose(got[real], ref.numpy()[real], atol=tol, rtol=0)


def assert_step_logits(prog, ids, mask, seq, want, prefilled: int) -> None:
    """An encoder-decoder program's logits of decoder tokens seq [rows, n] equal
    transformers' teacher-forced `want` [rows, n, vocab]: one decode_step at a time, as a
    C++ app drives them, and one decode_step after a prefill of the first `prefilled`."""
    tol = logits_tol(want)
    states = prog.run("encode", ids, mask)
    smask = prog.run("source_mask", mask)
    max_len = seq.shape[1] + 4
    cache = prog.run("init_cache", states, ids.shape[0], max_len)
    for step in range(seq.shape[1]):
        logits = prog.run("decode_step", cache, seq[:, step:step + 1], smask, step)
        np.testing.assert_allclose(logits, want[:, step], atol=tol, rtol=0, err_msg=f"step {step}")
    cache = prog.run("prefill", prog.run("init_cache", states, ids.shape[0], max_len), seq[:, :prefilled], smask)
    np.testing.assert_allclose(prog.run("decode_step", cache, seq[:, prefilled:prefilled + 1], smask, prefilled),
                               want[:, prefilled], atol=tol, rtol=0)
