"""Decoder-only models (GPT-2, Llama, Qwen2, Mistral, Gemma, Phi-3) against transformers
itself: logits of the forward pass and of each decode step within 1e-4, and generate token-exact
(greedy and beam search with several returned sequences), on seeded random-weight
checkpoints of odd sizes (tests/fixtures/random_checkpoints.py) with batches of
left-padded prompts of different lengths."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorvm
from decoder_only_helpers import NAMES, checkpoint, decoder_checkpoints, hf_model, hf_position_ids, left_padded, random_prompts

ATOL = 1e-4


@pytest.fixture(scope="module", params=NAMES)
def case(request, tmp_path_factory):
    name = request.param
    out = tmp_path_factory.mktemp(name) / "model.tvm"
    tensorvm.import_hf(checkpoint(name), out)
    return name, tensorvm.load(out), hf_model(name)


def _prompts(name, model, lengths, seed=0):
    rng = np.random.default_rng(seed)
    if name == "tiny-llama":  # its task: [BOS, a..., SEP] -> a reversed, EOS
        task = decoder_checkpoints.committed_task(name)
        body = random_prompts(rng, task["vocab"], [n - 2 for n in lengths], avoid=range(task["first_token"]))
        return left_padded([[task["bos"], *b, task["sep"]] for b in body], pad=task["pad"])
    return left_padded(random_prompts(rng, model.config.vocab_size, lengths), pad=0)


def test_forward_logits(case):
    name, prog, model = case
    ids, mask = _prompts(name, model, [7, 3, 5])
    with torch.no_grad():
        ref = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                    position_ids=torch.tensor(hf_position_ids(mask))).logits.numpy()
    got = prog.run("forward", ids, mask)
    assert got.shape == ref.shape
    real = mask == 1  # a padded position's output is not defined the same way
    np.testing.assert_allclose(got[real], ref[real], atol=ATOL, rtol=0)


def test_prefill_logits_is_the_last_position_of_forward_and_fills_the_cache(case):
    """generate's first step takes prefill_logits' logits (no decode step): they are
    forward's at the last position, and the cache it leaves is prefill's."""
    name, prog, model = case
    ids, mask = _prompts(name, model, [7, 3, 5])
    rows, n = ids.shape
    full_mask = np.concatenate([mask, np.ones((rows, 1), mask.dtype)], axis=1)
    a, b = prog.run("init_cache", rows, n + 1), prog.run("init_cache", rows, n + 1)
    last = prog.run("prefill_logits", a, ids, full_mask)
    np.testing.assert_allclose(last, prog.run("forward", ids, mask)[:, -1], atol=ATOL, rtol=0)
    prog.run("prefill", b, ids, full_mask)
    nxt = np.argmax(last, -1)[:, None]
    # the same hidden() over the same shapes: the same cache bits
    np.testing.assert_array_equal(prog.run("decode_step", a, nxt, full_mask, n),
                                  prog.run("decode_step", b, nxt, full_mask, n))


@pytest.mark.parametrize("lengths", [[6], [7, 3, 5]], ids=["batch1", "batch3"])
def test_greedy_and_step_logits(case, lengths):
    name, prog, model = case
    ids, mask = _prompts(name, model, lengths, seed=len(lengths))
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=12,
                             do_sample=False, output_logits=True, return_dict_in_generate=True)
    out = prog.generate(ids, mask, max_new_tokens=12, output_scores=True)
    np.testing.assert_array_equal(out.sequences, ref.sequences.numpy())
    # no processor is on by default, so the scores are the decode steps' logits
    for step, (got, want) in enumerate(zip(out.scores, ref.logits)):
        np.testing.assert_allclose(got, want.numpy(), atol=ATOL, rtol=0, err_msg=f"step {step}")


@pytest.mark.parametrize("lengths", [[5], [4, 8, 6]], ids=["batch1", "batch3"])
def test_beam_search(case, lengths):
    name, prog, model = case
    ids, mask = _prompts(name, model, lengths, seed=10 + len(lengths))
    kw = dict(max_new_tokens=10, num_beams=3, num_return_sequences=2, do_sample=False)
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), output_scores=True,
                             return_dict_in_generate=True, **kw)
    out = prog.generate(ids, mask, output_scores=True, **kw)
    np.testing.assert_array_equal(out.sequences, ref.sequences.numpy())
    np.testing.assert_allclose(out.sequences_scores, ref.sequences_scores.numpy(), atol=ATOL, rtol=0)


@pytest.mark.parametrize("penalty", [1.8, 0.6])
def test_repetition_penalty_skips_left_padding(case, penalty):
    """transformers builds RepetitionPenaltyLogitsProcessor with prompt_ignore_length =
    each row's leading padding (from attention_mask), so padding tokens are not
    penalized. Padding with the end token shows it: a penalty below 1 on a padded row
    would boost EOS and end the row early. Greedy, beam search, and the first step's
    scores with sampled rows (num_return_sequences rows per sentence)."""
    name, prog, model = case
    eos = model.generation_config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    rng = np.random.default_rng(21)
    ids, mask = left_padded(random_prompts(rng, model.config.vocab_size, [3, 7, 5], avoid=(eos,)), pad=eos)
    for kw in (dict(max_new_tokens=8), dict(max_new_tokens=6, num_beams=3, num_return_sequences=2),
               dict(max_new_tokens=1, do_sample=True, num_return_sequences=2, top_k=0)):
        with torch.no_grad():
            ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                                 repetition_penalty=penalty, output_scores=True, return_dict_in_generate=True,
                                 **{"do_sample": False, **kw})
        out = prog.generate(ids, mask, repetition_penalty=penalty, output_scores=True, **kw)
        if not kw.get("do_sample"):
            np.testing.assert_array_equal(out.sequences, ref.sequences.numpy(), err_msg=str(kw))
        got, want = out.scores[0], ref.scores[0].numpy()
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], atol=ATOL, rtol=0,
                                   err_msg=str(kw))


def test_repetition_penalty_issue_26_reproducer(tmp_path):
    """The peer suite's case: row 0's token 2 (the end token, its padding) keeps its raw logit."""
    tensorvm.import_hf(checkpoint("gpt2-odd"), tmp_path / "m.tvm")
    prog, model = tensorvm.load(tmp_path / "m.tvm"), hf_model("gpt2-odd")
    ids, mask = np.array([[2, 2, 50, 60, 70], [10, 20, 30, 40, 50]]), np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), repetition_penalty=1.8,
                             max_new_tokens=1, do_sample=False, output_scores=True, output_logits=True,
                             return_dict_in_generate=True)
    out = prog.generate(ids, mask, repetition_penalty=1.8, max_new_tokens=1, output_scores=True, output_logits=True)
    assert ref.scores[0][0, 2] == ref.logits[0][0, 2]  # transformers leaves it unpenalized
    np.testing.assert_allclose(out.scores[0], ref.scores[0].numpy(), atol=ATOL, rtol=0)


def test_default_length_is_twenty_new_tokens(case):
    name, prog, model = case
    ids, mask = _prompts(name, model, [4, 9], seed=3)
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False)
    np.testing.assert_array_equal(prog.generate(ids, mask, do_sample=False), ref.numpy())


def test_replay_matches_vm(case):
    name, prog, model = case
    ids, mask = _prompts(name, model, [3, 5], seed=4)
    kw = dict(max_new_tokens=4, num_beams=2)
    np.testing.assert_array_equal(prog.generate(ids, mask, engine="replay", **kw), prog.generate(ids, mask, **kw))


def test_decoder_input_ids_refused(case):
    name, prog, model = case
    ids, mask = _prompts(name, model, [3])
    with pytest.raises(ValueError, match="decoder-only model's prompt is input_ids"):
        prog.generate(ids, mask, decoder_input_ids=ids)
