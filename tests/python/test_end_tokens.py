"""Several end tokens (eos_token_id as a list, as Llama 3 configs have) and
output_logits, against transformers' generate.

A random-weight Marian variant (tiny-untied: vocabulary 48) whose
generation_config lists two end tokens: its EOS and the token greedy search
emits most often (chosen from transformers' own output, so the second end token
does end rows), imported and compared token for token, greedy and beam search,
with sequences_scores and per-step scores within 1e-4. The same list passed at
run time (generate's eos_token_id keyword) to a program imported with one EOS.
output_logits: the raw logits per step within 1e-4 of transformers' for greedy,
beam search and (first step) sampling.
"""
import shutil

import numpy as np
import pytest

import tensorvm
from marian_fixtures import hf, imported
from parity_helpers import compare, source_batches
from tensorvm.pycompiler.generation import generate
from tensorvm.pycompiler.import_hf import import_hf

CKPT = "tiny-untied"


@pytest.fixture(scope="module")
def two_eos(tmp_path_factory):
    """(checkpoint with eos_token_id [eos, x], its program, the plain program, x)."""
    from transformers import GenerationConfig

    root = tmp_path_factory.mktemp("eos")
    ckpt, plain = imported(CKPT, root)
    eos = plain.meta["eos_token_id"]
    ids, mask = source_batches(plain, 6, 3, 1)[0]
    out = hf.generate(ckpt, ids, mask, num_beams=1)["sequences"][:, 1:]
    tokens, counts = np.unique(out, return_counts=True)
    x = int(next(t for t in tokens[np.argsort(-counts, kind="stable")] if t not in (eos, plain.meta["pad_token_id"])))
    copy = root / "two-eos"
    shutil.copytree(ckpt, copy)
    gen = GenerationConfig.from_pretrained(copy)
    gen.update(eos_token_id=[eos, x])
    gen.save_pretrained(copy)
    import_hf(copy, root / "two-eos.tvm")
    return copy, tensorvm.load(root / "two-eos.tvm"), plain, x


@pytest.mark.parametrize("num_beams", [1, 4])
def test_generation_config_eos_list(two_eos, num_beams):
    ckpt, prog, plain, x = two_eos
    assert prog.meta["eos_token_id"] == [plain.meta["eos_token_id"], x]
    batches = source_batches(plain, 6, 3, 3)
    assert compare(ckpt, prog, batches, scores=True, num_beams=num_beams) == 0
    # the second end token does end rows (else this test would not test it)
    ended = [generate(prog, ids, mask, num_beams=num_beams) for ids, mask in batches]
    assert any((s[:, 1:] == x).any() for s in ended)


@pytest.mark.parametrize("options", [{"num_beams": 1}, {"num_beams": 4}, {"num_beams": 3, "min_new_tokens": 4},
                                     {"num_beams": 1, "min_new_tokens": 4}], ids=str)
def test_eos_list_at_run_time(two_eos, options):
    """generate(eos_token_id=[a, b]) on a program imported with one EOS, as transformers' keyword;
    min_new_tokens bans every end token."""
    ckpt, _, plain, x = two_eos
    eos = [plain.meta["eos_token_id"], x]
    assert compare(hf.checkpoint_dir(CKPT), plain, source_batches(plain, 7, 3, 2), scores=True, eos_token_id=eos,
                   **options) == 0


def test_eos_list_beam_sampling_first_step(two_eos):
    """Beam sampling keeps one more token than there are end tokens (transformers' min_tokens_to_keep)."""
    ckpt, prog, plain, _ = two_eos
    for ids, mask in source_batches(plain, 9, 3, 2):
        opts = dict(do_sample=True, num_beams=3, max_new_tokens=3, top_k=1)  # step 1 is not the forced EOS
        want = hf.generate(ckpt, ids, mask, with_scores=True, **opts)["scores"][0]
        got = generate(prog, ids, mask, output_scores=True, seed=1, **opts).scores[0]
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        assert (np.isfinite(got).sum(-1) == 3).all()


def test_eos_errors(two_eos):
    _, prog, _, _ = two_eos
    ids = np.array([[5, 6, 0]])
    for value, match in [([], "at least one"), ([3, 99], "vocabulary"), ("x", "token ids")]:
        with pytest.raises(ValueError, match=match):
            generate(prog, ids, eos_token_id=value)
    from tensorvm import _C

    s = _C.Session(_C.Program.load(str(prog.path)))
    for value, match in [(np.zeros([0], np.int64), "eos_token_id must name at least one token"),
                         (np.array([3, 400]), "eos_token_id is not in the decoder vocabulary")]:
        with pytest.raises(_C.VMError, match=match):
            s.run_named("generate", {"input_ids": ids, "eos_token_id": value})


@pytest.mark.parametrize("options", [{"num_beams": 1}, {"num_beams": 4}, {"num_beams": 2, "num_return_sequences": 2},
                                     {"num_beams": 1, "repetition_penalty": 1.5}], ids=str)
def test_output_logits(tmp_path_factory, options):
    """The raw logits of every step (before any processor) within 1e-4 of transformers'."""
    ckpt, prog = imported("tiny-marian", tmp_path_factory.mktemp("logits"))
    for ids, mask in source_batches(prog, 4, 3, 2):
        want = hf.generate(ckpt, ids, mask, with_scores=True, **options)
        got = generate(prog, ids, mask, output_logits=True, return_dict_in_generate=True, **options)
        np.testing.assert_array_equal(got.sequences, want["sequences"])
        assert got.scores is None and "logits" in got.keys()
        np.testing.assert_allclose(np.stack(got.logits), want["logits"], atol=1e-4, rtol=0)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_output_logits_sampling_first_step(tmp_path_factory, num_beams):
    """Sampling: the first step's raw logits (the same whatever is drawn); one array per step."""
    ckpt, prog = imported("tiny-marian", tmp_path_factory.mktemp("logits"))
    for ids, mask in source_batches(prog, 5, 3, 1):
        want = hf.generate(ckpt, ids, mask, with_scores=True, do_sample=True, num_beams=num_beams, max_new_tokens=1)
        got = generate(prog, ids, mask, do_sample=True, num_beams=num_beams, max_new_tokens=4, output_logits=True,
                       seed=3)
        assert len(got.logits) == got.sequences.shape[1] - 1 or num_beams > 1
        np.testing.assert_allclose(got.logits[0], want["logits"][0], atol=1e-4, rtol=0)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_decoder_only_eos_list_and_logits(tmp_path_factory, num_beams):
    """A decoder-only model (GPT-2 of odd sizes) with two end tokens at run time, and
    its raw logits: token-exact and within 1e-4 of transformers."""
    import torch

    from decoder_only_helpers import checkpoint, hf_model, left_padded, random_prompts

    out = tmp_path_factory.mktemp("gpt2") / "model.tvm"
    tensorvm.import_hf(checkpoint("gpt2-odd"), out)
    prog, model = tensorvm.load(out), hf_model("gpt2-odd")
    ids, mask = left_padded(random_prompts(np.random.default_rng(5), model.config.vocab_size, [6, 3, 5]), pad=0)
    kw = dict(max_new_tokens=10, num_beams=num_beams, do_sample=False)
    with torch.no_grad():
        plain = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), **kw).numpy()
    new = plain[:, ids.shape[1]:]
    tokens, counts = np.unique(new, return_counts=True)
    x = int(next(t for t in tokens[np.argsort(-counts, kind="stable")] if t != 2))
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), eos_token_id=[2, x],
                             output_logits=True, return_dict_in_generate=True, **kw)
    got = prog.generate(ids, mask, eos_token_id=[2, x], output_logits=True, **kw)
    np.testing.assert_array_equal(got.sequences, ref.sequences.numpy())
    np.testing.assert_allclose(np.stack(got.logits), torch.stack(ref.logits).numpy(), atol=1e-4, rtol=0)
