"""Prompt-lookup decoding (generate(prompt_lookup_num_tokens=N), docs/generation.md
"Speculative and prompt-lookup decoding"): greedy output token-exact with the program's
plain greedy and with transformers' own generate(prompt_lookup_num_tokens=N), decoder-only
and encoder-decoder, on random-weight checkpoints of odd sizes and on the trained fixtures;
the edge cases (k past max_new_tokens, one new token, end tokens inside accepted
candidates, one-token prompts), scores and streaming per accepted token, and the refusals.

Exactness: a verify pass computes c + 1 positions in one pass, whose sums may round
differently from one-position steps; on these checkpoints (logits well spread, or trained)
no pick is that close, so the tokens are equal."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import tensorvm
from decoder_only_helpers import checkpoint, decoder_checkpoints

# decoder-only: rotary GQA with two end tokens; a sliding window shorter than the rows; the
# trained tiny-llama. encoder-decoder: T5 (relative position bias: the self_mask hook), the
# trained tiny-marian (BART family)
CASES = ("llama-gqa2", "mistral-window5", "tiny-llama", "t5-relu-tied", "tiny-marian")
# transformers 5.23's prompt lookup fails on T5 (IndexError in its EncoderDecoderCache)
HF_FAILS = {"t5-relu-tied"}
MARIAN = decoder_checkpoints.Path(__file__).resolve().parents[1] / "fixtures" / "data" / "tiny-marian"


def _checkpoint(name):
    return MARIAN if name == "tiny-marian" else checkpoint(name)


def _hf_class(name):
    if name == "tiny-marian":
        return "MarianMTModel"
    return decoder_checkpoints.CONFIGS[name][0] if name in decoder_checkpoints.CONFIGS else "LlamaForCausalLM"


@pytest.fixture(scope="module", params=CASES)
def case(request, tmp_path_factory):
    name = request.param
    out = tmp_path_factory.mktemp(name) / "model.tvm"
    tensorvm.import_hf(_checkpoint(name), out)
    model = getattr(transformers, _hf_class(name)).from_pretrained(_checkpoint(name), attn_implementation="eager")
    return name, tensorvm.load(out), model.eval()


def _prompts(name, n, seed=0):
    """Rows that repeat a short motif (so the lookup finds candidates), of varied lengths;
    tiny-llama's in its task's form ([BOS, tokens..., SEP])."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        motif = list(rng.integers(3, 20, int(rng.integers(1, 4))))
        row = (motif * 8)[: int(rng.integers(1, 14))]
        if name == "tiny-llama":
            task = decoder_checkpoints.committed_task(name)
            row = [task["bos"], *[task["first_token"] + t for t in row], task["sep"]]
        elif name == "tiny-marian":
            row = row + [0]
        rows.append(np.array([row], np.int64))
    return rows


def _hf(model, ids, **kw):
    with torch.no_grad():
        t = torch.tensor(ids)
        return model.generate(t, attention_mask=torch.ones_like(t), do_sample=False, num_beams=1, **kw).numpy()


def test_greedy_is_token_exact_with_plain_greedy_and_transformers(case):
    name, prog, model = case
    rng = np.random.default_rng(1)
    for ids in _prompts(name, 5):
        for k, ngram in ((int(rng.integers(1, 5)), None), (10, 1), (3, 4)):
            kw = dict(max_new_tokens=int(rng.integers(1, 16)))
            plain = np.asarray(prog.generate(ids, num_beams=1, **kw))
            extra = {} if ngram is None else {"max_matching_ngram_size": ngram}
            got = np.asarray(prog.generate(ids, num_beams=1, prompt_lookup_num_tokens=k, **extra, **kw))
            np.testing.assert_array_equal(got, plain, err_msg=f"{name} {ids} k={k}")
            if name not in HF_FAILS:
                np.testing.assert_array_equal(got, _hf(model, ids, prompt_lookup_num_tokens=k, **extra, **kw),
                                              err_msg=f"{name} {ids} k={k} (transformers)")


def test_candidates_are_accepted_and_streamed_per_pass(case):
    """A row that repeats: passes keep several tokens (the stream shows them), and the
    per-step scores and logits are one per kept token, those of plain greedy."""
    name, prog, _ = case
    ids = _prompts(name, 1, seed=3)[0]
    ids = np.concatenate([ids, ids, ids], axis=1)[:, :20] if name != "tiny-llama" else ids
    puts = []

    class Streamer:
        def put(self, value):
            puts.append(np.asarray(value).reshape(-1).tolist())

        def end(self):
            pass

    kw = dict(num_beams=1, max_new_tokens=12, output_scores=True, output_logits=True, return_dict_in_generate=True)
    out = prog.generate(ids, prompt_lookup_num_tokens=4, streamer=Streamer(), **kw)
    plain = prog.generate(ids, **kw)
    seq = np.asarray(out.sequences)
    np.testing.assert_array_equal(seq, np.asarray(plain.sequences))
    decoder_only = name != "tiny-marian" and not _hf_class(name).endswith("ConditionalGeneration")
    prompt_len = ids.shape[1] if decoder_only else 1
    assert sum(puts[1:], []) == seq[0, prompt_len:].tolist()
    steps = seq.shape[1] - prompt_len
    for got, want in ((out.scores, plain.scores), (out.logits, plain.logits)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape == (steps, 1, want.shape[2])
        finite = np.isfinite(want)
        assert (np.isfinite(got) == finite).all()
        np.testing.assert_allclose(got[finite], want[finite], atol=1e-4, rtol=0)


def test_trained_marian_accepts_candidates(case):
    """tiny-marian reverses and maps its source: a repeating source gives a repeating
    output, so most tokens come from accepted candidates (fewer passes than tokens)."""
    name, prog, _ = case
    if name != "tiny-marian":
        pytest.skip("the trained translation fixture only")
    ids = np.array([[3, 4, 5] * 4 + [0]], np.int64)
    passes = []
    out = np.asarray(prog.generate(ids, num_beams=1, prompt_lookup_num_tokens=5,
                                   streamer=type("S", (), {"put": lambda self, v: passes.append(v),
                                                           "end": lambda self: None})()))
    np.testing.assert_array_equal(out, np.asarray(prog.generate(ids, num_beams=1)))
    assert out.shape[1] == 14 and out[0, -1] == 0
    assert len(passes) - 1 <= 7  # 13 tokens (the prompt is the first put)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    out = tmp_path_factory.mktemp("llama") / "model.tvm"
    tensorvm.import_hf(checkpoint("llama-gqa2"), out)  # end tokens 2 and 5
    return tensorvm.load(out)


def test_attacker_sizes(llama):
    """k above max_new_tokens and above the positions left, one new token, a one-token
    prompt, max_length reached inside an accepted run, an n-gram longer than the row."""
    prompt = np.array([[7, 8, 9, 7, 8, 9, 7, 8]], np.int64)
    for kw in (dict(max_new_tokens=1), dict(max_new_tokens=2), dict(max_new_tokens=5),
               dict(max_length=prompt.shape[1] + 3), dict(max_new_tokens=96 - prompt.shape[1])):
        plain = np.asarray(llama.generate(prompt, num_beams=1, **kw))
        for k, n in ((1, 2), (7, 2), (1000, 2), (3, 1000)):
            got = llama.generate(prompt, num_beams=1, prompt_lookup_num_tokens=k, max_matching_ngram_size=n, **kw)
            np.testing.assert_array_equal(np.asarray(got), plain, err_msg=f"{kw} k={k} n={n}")
    one = np.array([[7]], np.int64)
    np.testing.assert_array_equal(np.asarray(llama.generate(one, num_beams=1, prompt_lookup_num_tokens=3)),
                                  np.asarray(llama.generate(one, num_beams=1)))


def test_end_token_inside_accepted_candidates(llama):
    """The prompt holds an end token after the n-gram the row ends with: the candidates are
    cut before it (transformers' rule), and a run the model accepts up to an end token
    stops there, as plain greedy stops."""
    plain = np.asarray(llama.generate(np.array([[7, 8, 9]], np.int64), num_beams=1, max_new_tokens=30))
    body = plain[0].tolist()
    for eos in (2, 5):
        # the model's own continuation, with an end token planted in the copy the lookup finds
        prompt = np.array([body[:6] + [eos] + body[3:6]], np.int64)
        for kw in (dict(), dict(eos_token_id=[eos]), dict(eos_token_id=[body[6], eos])):
            want = np.asarray(llama.generate(prompt, num_beams=1, max_new_tokens=20, **kw))
            got = llama.generate(prompt, num_beams=1, max_new_tokens=20, prompt_lookup_num_tokens=6, **kw)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{prompt} {kw}")


def test_block_picks_equal_the_per_position_loop(llama):
    """Greedy with an idle processor chain picks a pass's tokens with one argmax over the
    block (speculative.block_picks); output_scores takes the per-position loop instead.
    Both keep the same tokens, with end tokens and max_length inside the block."""
    prompt = np.array([[7, 8, 9, 7, 8, 9, 7, 8]], np.int64)
    prof = llama.profile("generate", prompt, np.ones_like(prompt), num_beams=1, max_new_tokens=12,
                         prompt_lookup_num_tokens=4)
    assert "block_picks" in prof.instruction_table(2000)
    for kw in (dict(max_new_tokens=12), dict(max_new_tokens=3), dict(max_new_tokens=30, eos_token_id=[9]),
               dict(max_new_tokens=30, eos_token_id=[8, 2])):
        for k in (1, 4, 50):
            block = np.asarray(llama.generate(prompt, num_beams=1, prompt_lookup_num_tokens=k, **kw))
            loop = llama.generate(prompt, num_beams=1, prompt_lookup_num_tokens=k, output_scores=True,
                                  return_dict_in_generate=True, **kw)
            np.testing.assert_array_equal(block, np.asarray(loop.sequences), err_msg=f"{kw} k={k}")
            np.testing.assert_array_equal(block, np.asarray(llama.generate(prompt, num_beams=1, **kw)))


def test_processors_see_each_verified_position(llama):
    """The processors run on every verified position with the row as it is there:
    repetition penalty, n-gram bans, min_new_tokens, a forced end token, bad words."""
    prompt = np.array([[7, 8, 9, 7, 8, 9, 7, 8]], np.int64)
    for kw in (dict(repetition_penalty=1.3), dict(no_repeat_ngram_size=2), dict(min_new_tokens=6),
               dict(bad_words_ids=[[9, 7]]), dict(suppress_tokens=[9]), dict(forced_eos_token_id=2)):
        want = np.asarray(llama.generate(prompt, num_beams=1, max_new_tokens=12, **kw))
        got = llama.generate(prompt, num_beams=1, max_new_tokens=12, prompt_lookup_num_tokens=4, **kw)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(kw))


def test_sampling_draws_from_the_verified_positions(llama):
    """do_sample with prompt lookup (transformers' rule without a draft's probabilities: a
    token is drawn at each verified position, candidates kept while they equal the
    draws): valid rows, the same for a seed, and top_k=1 is greedy."""
    prompt = np.array([[7, 8, 9, 7, 8, 9, 7, 8]], np.int64)
    a = np.asarray(llama.generate(prompt, num_beams=1, do_sample=True, seed=3, max_new_tokens=10,
                                  prompt_lookup_num_tokens=4))
    b = np.asarray(llama.generate(prompt, num_beams=1, do_sample=True, seed=3, max_new_tokens=10,
                                  prompt_lookup_num_tokens=4))
    np.testing.assert_array_equal(a, b)
    one = llama.generate(prompt, num_beams=1, do_sample=True, top_k=1, max_new_tokens=10, prompt_lookup_num_tokens=4)
    np.testing.assert_array_equal(np.asarray(one), np.asarray(llama.generate(prompt, num_beams=1, max_new_tokens=10)))


@pytest.mark.parametrize("kw, message", [
    (dict(num_beams=2), "needs num_beams=1"),
    (dict(num_beams=1, do_sample=True, num_return_sequences=2), "needs num_return_sequences=1"),
    (dict(num_beams=1, prompt_lookup_num_tokens=0), "prompt_lookup_num_tokens must be"),
    (dict(num_beams=1, max_matching_ngram_size=0), "max_matching_ngram_size must be"),
])
def test_refusals(llama, kw, message):
    kw = {"prompt_lookup_num_tokens": 3, **kw}
    with pytest.raises(Exception, match=message):
        llama.generate(np.array([[7, 8, 9]], np.int64), **kw)


def test_batch_above_one_is_refused_inside_the_program(llama):
    """Batch > 1 is refused as transformers refuses it (a C++ or CLI caller gets the same
    error from the program's check)."""
    with pytest.raises(Exception, match="takes one input sequence"):
        llama.generate(np.array([[7, 8, 9], [4, 5, 6]], np.int64), num_beams=1, prompt_lookup_num_tokens=3)


def test_off_by_default(llama):
    """Without the option the program runs the plain search (speculation never starts by itself)."""
    prompt = np.array([[7, 8, 9]], np.int64)
    out = llama.generate(prompt, num_beams=1, max_new_tokens=4, output_scores=True, return_dict_in_generate=True)
    assert np.asarray(out.scores).shape[0] == 4


def test_source_lookup_in_encoder_decoders(tmp_path):
    """prompt_lookup_source=True also searches the source tokens (before the decoder row):
    the same tokens as plain greedy; with a source vocabulary larger than the decoder's
    (tiny-sepvocab-gelu: 48 source ids, 36 decoder ids), a source id the decoder lacks ends
    the candidates instead of reaching its embedding."""
    root = MARIAN.parent
    for name, high in (("tiny-marian", 40), ("tiny-sepvocab-gelu", 48)):
        tensorvm.import_hf(root / name, tmp_path / f"{name}.tvm")
        prog = tensorvm.load(tmp_path / f"{name}.tvm")
        rng = np.random.default_rng(4)
        for _ in range(8):
            motif = list(rng.integers(2, high, int(rng.integers(1, 4))))
            ids = np.array([(motif * 6)[: int(rng.integers(1, 13))] + [0]], np.int64)
            want = np.asarray(prog.generate(ids, num_beams=1, max_new_tokens=12))
            got = prog.generate(ids, num_beams=1, max_new_tokens=12, prompt_lookup_num_tokens=4,
                                prompt_lookup_source=True)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{name} {ids}")


def test_source_lookup_is_refused_where_there_is_no_source(llama):
    with pytest.raises(Exception, match="prompt_lookup_source needs an encoder-decoder"):
        llama.generate(np.array([[7, 8, 9]], np.int64), num_beams=1, prompt_lookup_num_tokens=3,
                       prompt_lookup_source=True)
