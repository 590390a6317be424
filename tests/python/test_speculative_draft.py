"""Speculative decoding with a draft model in the program (import-hf --draft SCHEME,
--draft-model CKPT; generate(use_draft=True, num_assistant_tokens=k,
num_assistant_tokens_schedule=...)): greedy output token-exact with the target's plain
greedy, decoder-only and encoder-decoder, self-speculation (int4, w4a8, int8 drafts of the
trained fixtures) and a separate draft checkpoint; the draft's candidates are accepted
(fewer verify passes than tokens); the CLI; the refusals."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tensorvm
from decoder_only_helpers import checkpoint, decoder_checkpoints
from pyc_helpers import chi_square_pvalue
from tensorvm.pycompiler.importers import UnsupportedConfig
from tensorvm.pycompiler.locations import get_tensorvm_run

MARIAN = decoder_checkpoints.Path(__file__).resolve().parents[1] / "fixtures" / "data" / "tiny-marian"


def _passes(prog, ids, **kw):
    """(sequences, verify passes): each pass streams its kept tokens in one put."""
    puts = []
    streamer = type("S", (), {"put": lambda self, v: puts.append(v), "end": lambda self: None})()
    return np.asarray(prog.generate(ids, num_beams=1, streamer=streamer, **kw)), len(puts) - 1


def _llama_prompts(n, seed=0):
    task = decoder_checkpoints.committed_task("tiny-llama")
    rng = np.random.default_rng(seed)
    return [np.array([[task["bos"], *rng.integers(task["first_token"], task["vocab"], int(rng.integers(2, 10))),
                       task["sep"]]], np.int64) for _ in range(n)]


@pytest.fixture(scope="module", params=["int4", "w4a8"])
def llama_self(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("llama") / "m.tvm"
    tensorvm.import_hf(checkpoint("tiny-llama"), out, draft=request.param)
    return tensorvm.load(out)


def test_self_speculation_decoder_only_is_exact_and_accepts(llama_self):
    """tiny-llama (trained: reverses its prompt) drafted by its own 4-bit copy: the tokens of
    plain greedy, in fewer passes than tokens; k fixed, larger than max_new_tokens, or heuristic."""
    tokens = passes = 0
    for ids in _llama_prompts(6):
        for kw in (dict(num_assistant_tokens=4), dict(num_assistant_tokens=50, max_new_tokens=3),
                   dict(num_assistant_tokens=1, num_assistant_tokens_schedule="heuristic"),
                   dict(max_new_tokens=1)):
            limit = {"max_new_tokens": kw["max_new_tokens"]} if "max_new_tokens" in kw else {}
            plain = np.asarray(llama_self.generate(ids, num_beams=1, **limit))
            got, n = _passes(llama_self, ids, use_draft=True, **kw)
            np.testing.assert_array_equal(got, plain, err_msg=f"{ids} {kw}")
            if kw.get("num_assistant_tokens") == 4:
                tokens, passes = tokens + got.shape[1] - ids.shape[1], passes + n
    assert passes < tokens / 2, (passes, tokens)


def test_self_speculation_encoder_decoder(tmp_path):
    """tiny-marian with an int8 draft (its own encoder, its own cache), and with itself at f32
    as a separate draft checkpoint (every candidate accepted)."""
    tensorvm.import_hf(MARIAN, tmp_path / "a.tvm", draft="int8")
    tensorvm.import_hf(MARIAN, tmp_path / "b.tvm", draft_model=MARIAN)
    progs = [tensorvm.load(tmp_path / "a.tvm"), tensorvm.load(tmp_path / "b.tvm")]
    rng = np.random.default_rng(0)
    for _ in range(8):
        ids = np.array([list(rng.integers(2, 38, int(rng.integers(1, 12)))) + [0]], np.int64)
        plain = np.asarray(progs[0].generate(ids, num_beams=1))
        for prog in progs:
            for kw in (dict(num_assistant_tokens=3), dict(num_assistant_tokens_schedule="heuristic"),
                       dict(num_assistant_tokens=2, max_new_tokens=4)):
                want = plain if "max_new_tokens" not in kw else np.asarray(prog.generate(ids, num_beams=1,
                                                                                         max_new_tokens=4))
                got, _ = _passes(prog, ids, use_draft=True, **kw)
                np.testing.assert_array_equal(got, want, err_msg=f"{ids} {kw}")
        # the same model as its own draft: one pass per k + 1 tokens (the last token, EOS, ends it)
        got, n = _passes(progs[1], ids, use_draft=True, num_assistant_tokens=3)
        assert n == -(-(got.shape[1] - 1) // 4)


def test_separate_draft_checkpoint_is_exact_with_transformers(tmp_path):
    """llama-mha drafted by llama-mqa (random weights, same vocabulary and tokens): the
    target's plain greedy and transformers' own greedy, whatever the draft proposes."""
    import torch
    import transformers

    tensorvm.import_hf(checkpoint("llama-mha"), tmp_path / "m.tvm", draft_model=checkpoint("llama-mqa"))
    prog = tensorvm.load(tmp_path / "m.tvm")
    model = transformers.LlamaForCausalLM.from_pretrained(checkpoint("llama-mha")).eval()
    rng = np.random.default_rng(2)
    for _ in range(4):
        ids = rng.integers(3, 83, (1, int(rng.integers(1, 9))))
        with torch.no_grad():
            t = torch.tensor(ids)
            hf = model.generate(t, attention_mask=torch.ones_like(t), do_sample=False, num_beams=1,
                                max_new_tokens=12).numpy()
        got = np.asarray(prog.generate(ids, num_beams=1, max_new_tokens=12, use_draft=True, num_assistant_tokens=3))
        np.testing.assert_array_equal(got, hf)


def test_command_line(tmp_path):
    """`--arg use_draft=1` (the same --arg in tensorvm run and tensorvm-run)."""
    tensorvm.import_hf(MARIAN, tmp_path / "m.tvm", draft="int8")
    outs = []
    for extra in ([], ["--arg", "use_draft=1", "--arg", "num_assistant_tokens=3"]):
        res = subprocess.run([str(get_tensorvm_run()), str(tmp_path / "m.tvm"), "generate", "--ids", "5 9 14 3 22 0",
                              "--arg", "num_beams=1", *extra], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout)
    assert outs[0] == outs[1]


@pytest.fixture(scope="module")
def marian_plain(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "m.tvm"
    tensorvm.import_hf(MARIAN, out)
    return tensorvm.load(out)


def test_refusals(marian_plain, tmp_path):
    ids = np.array([[5, 9, 0]], np.int64)
    with pytest.raises(Exception, match="use_draft=True needs a program with a draft model"):
        marian_plain.generate(ids, num_beams=1, use_draft=True)
    with pytest.raises(Exception, match="num_assistant_tokens"):
        marian_plain.generate(ids, num_beams=1, num_assistant_tokens=0)
    # a draft of another vocabulary or other end tokens
    with pytest.raises(UnsupportedConfig, match="eos_token_id"):
        tensorvm.import_hf(checkpoint("llama-mha"), tmp_path / "x.tvm", draft_model=checkpoint("llama-gqa2"))
    with pytest.raises(UnsupportedConfig, match="vocab_size|is_encoder_decoder"):
        tensorvm.import_hf(MARIAN, tmp_path / "y.tvm", draft_model=checkpoint("llama-mha"))
    from tensorvm.pycompiler.draft_merge import check_compatible
    with pytest.raises(UnsupportedConfig, match="draft model has 64 positions, fewer than the target's 96"):
        check_compatible({"max_position_embeddings": 96}, {"max_position_embeddings": 64})


def test_draft_refusals_at_run_time(tmp_path):
    tensorvm.import_hf(MARIAN, tmp_path / "m.tvm", draft="int8")
    prog = tensorvm.load(tmp_path / "m.tvm")
    with pytest.raises(Exception, match="pick one"):
        prog.generate(np.array([[5, 9, 0]], np.int64), num_beams=1, use_draft=True, prompt_lookup_num_tokens=3)
    with pytest.raises(Exception, match="takes one input sequence"):
        prog.generate(np.array([[5, 9, 0], [4, 4, 0]], np.int64), num_beams=1, use_draft=True)
    with pytest.raises(Exception, match="needs num_beams=1"):
        prog.generate(np.array([[5, 9, 0]], np.int64), num_beams=3, use_draft=True)
    # off by default: plain beam search, the checkpoint's default
    np.testing.assert_array_equal(np.asarray(prog.generate(np.array([[5, 9, 0]], np.int64))),
                                  np.asarray(prog.generate(np.array([[5, 9, 0]], np.int64), use_draft=False)))


def test_sampling_keeps_the_target_distribution(tmp_path):
    """Leviathan et al.'s rule with a draft that differs from the target (llama-mha drafted
    by llama-mqa, random weights): over 2000 seeds, the first two sampled tokens follow the
    target's exact distributions (from its forward pass; chi-square), and not the draft's.
    Prompt lookup's draw-and-compare rule too. Deterministic (seeded), so not flaky."""
    tensorvm.import_hf(checkpoint("llama-mha"), tmp_path / "m.tvm", draft_model=checkpoint("llama-mqa"))
    prog = tensorvm.load(tmp_path / "m.tvm")
    prompt, V, eos, n = [5, 17, 9], 83, 2, 2000

    def softmax(logits):
        e = np.exp(logits.astype(np.float64) - logits.max())
        return e / e.sum()

    def target(seq):
        return softmax(prog.run("forward", np.array([seq], np.int64), np.ones((1, len(seq)), np.int64))[0, -1])

    p1 = target(prompt)
    p2 = np.zeros(V + 1)  # the second token, or V: the row ended with the first
    for t in range(V):
        if t == eos:
            p2[V] += p1[t]
        else:
            p2[:V] += p1[t] * target(prompt + [t])
    cache = prog.run("draft_init_cache", 1, 8)
    q1 = softmax(prog.run("draft_decode_block", cache, np.array([prompt], np.int64), np.ones((1, 8), np.int64), 0)
                 [0, -1])

    for kw in (dict(use_draft=True, num_assistant_tokens=2), dict(prompt_lookup_num_tokens=2)):
        c1, c2 = np.zeros(V), np.zeros(V + 1)
        for seed in range(n):
            out = np.asarray(prog.generate(np.array([prompt], np.int64), num_beams=1, do_sample=True, top_k=0, seed=seed,
                                           max_new_tokens=2, **kw))
            c1[out[0, 3]] += 1
            c2[out[0, 4] if out.shape[1] > 4 else V] += 1
        assert chi_square_pvalue(c1, p1) > 1e-3 and chi_square_pvalue(c2, p2) > 1e-3, kw
        if "use_draft" in kw:
            assert chi_square_pvalue(c1, q1) < 1e-6  # the test can tell the draft's distribution from the target's
