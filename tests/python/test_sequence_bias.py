"""bad_words_ids with several-token entries and sequence_bias, at run time and from
a checkpoint's generation_config, against transformers' generate
(NoBadWordsLogitsProcessor, SequenceBiasLogitsProcessor).

The biased sequences are taken from transformers' own greedy output for the
batch (so a ban or a bias does act: a banned sequence that greedy search produced
must change that row), then greedy and beam search are compared token for token
with the processed scores of every step (same -inf pattern, values within 1e-4).
"""
import math
import shutil

import numpy as np
import pytest

import tensorvm
from marian_fixtures import hf, imported
from parity_helpers import compare, source_batches
from tensorvm.pycompiler.generation import generate


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def _words(ckpt, ids, mask, eos=0):
    """transformers' greedy output and sequences the model chose in it (before EOS):
    a pair and a triple of the row that generated most, and a pair of the last row;
    the pair is first."""
    out = hf.generate(ckpt, ids, mask, num_beams=1)["sequences"]
    gens = [r[1:].tolist()[:r[1:].tolist().index(eos)] if eos in r[1:] else r[1:].tolist() for r in out]
    longest = max(range(len(gens)), key=lambda r: len(gens[r]))
    g = gens[longest]
    assert len(g) >= 4, "the fixture should generate a few tokens before EOS"
    return out, [g[1:3], g[0:3], (gens[-1] + g)[:2]], longest


CASES = {
    "bad_words_multi": lambda w, out: {"bad_words_ids": w},
    "bad_words_mixed": lambda w, out: {"bad_words_ids": w + [[int(out[0, 1])], [5]]},
    "bias_multi": lambda w, out: {"sequence_bias": {tuple(x): 3.0 for x in w}},
    "bias_mixed": lambda w, out: {"sequence_bias": {tuple(w[0]): -2.5, tuple(w[1]): 1.5, (int(out[1, 1]),): -4.0,
                                                    (5,): 2.0}},
    # two entries ending in the same token both match: their biases add up
    "bias_summed": lambda w, out: {"sequence_bias": {tuple(w[1][1:]): 1.0, tuple(w[1]): 2.5}},
    "bias_list_form": lambda w, out: {"sequence_bias": [[w[0], -30.0], [w[2][:1] + w[0][1:], 4.0]]},
    "bias_single_inf": lambda w, out: {"sequence_bias": {(int(out[0, 1]),): -math.inf, (7,): 0.5}},
    "both": lambda w, out: {"bad_words_ids": [w[1]], "sequence_bias": {tuple(w[0]): -5.0, (9,): 1.0}},
}


# every case on tiny-marian; a few on a variant with a separate, smaller decoder vocabulary
RUNS = [("tiny-marian", n) for n in CASES] + [("tiny-sepvocab-gelu", n) for n in ("bad_words_mixed", "bias_mixed",
                                                                                   "both")]


@pytest.mark.parametrize("num_beams", [1, 4])
@pytest.mark.parametrize("model,name", RUNS, ids=[f"{m}-{n}" for m, n in RUNS])
def test_parity(root, model, name, num_beams):
    ckpt, prog = imported(model, root)
    for ids, mask in source_batches(prog, 3, 3, 2):
        out, words, longest = _words(ckpt, ids, mask, prog.meta["eos_token_id"])
        options = CASES[name](words, out)
        assert compare(ckpt, prog, [(ids, mask)], scores=True, num_beams=num_beams, **options) == 0
        if num_beams == 1 and name.startswith("bad_words"):
            # greedy search chose the first banned pair: that row must change
            got = generate(prog, ids, mask, num_beams=1, **options)
            assert got[longest, :4].tolist() != out[longest, :4].tolist()


def test_generation_config(root, tmp_path):
    """A checkpoint whose generation_config has several-token bad words and a
    sequence_bias: imported as generate's defaults, as transformers uses them."""
    from transformers import GenerationConfig

    from tensorvm.pycompiler.import_hf import import_hf

    plain_ckpt, plain = imported("tiny-untied", root)
    batches = source_batches(plain, 8, 3, 2)
    out, words, _ = _words(plain_ckpt, *batches[0], plain.meta["eos_token_id"])
    ckpt = tmp_path / "ckpt"
    shutil.copytree(plain_ckpt, ckpt)
    gen = GenerationConfig.from_pretrained(ckpt)
    gen.update(bad_words_ids=[words[0], [int(out[1, 1])], [plain.meta["eos_token_id"]]],
               sequence_bias=[[words[1], 2.0], [[5], -1.0]])
    gen.save_pretrained(ckpt)
    import_hf(ckpt, tmp_path / "m.tvm")
    prog = tensorvm.load(tmp_path / "m.tvm")
    assert prog.meta["generation"]["bad_words_ids"] == gen.bad_words_ids
    assert prog.meta["generation"]["sequence_bias"] == [[words[1], 2.0], [[5], -1.0]]
    for num_beams in (1, 4):
        assert compare(ckpt, prog, batches, scores=True, num_beams=num_beams) == 0
    # a keyword replaces the checkpoint's list, as in transformers
    assert compare(ckpt, prog, batches[:1], scores=True, num_beams=1, bad_words_ids=[[7]]) == 0


def test_errors(root):
    _, prog = imported("tiny-marian", root)
    ids = np.array([[5, 6, 0]])
    for kw, match in [({"bad_words_ids": []}, "non-empty list"), ({"bad_words_ids": [[]]}, "non-empty list"),
                      ({"bad_words_ids": [[3, 99]]}, "vocabulary"), ({"bad_words_ids": [3, 4]}, "non-empty list"),
                      ({"sequence_bias": {}}, "non-empty dict"), ({"sequence_bias": {(3, 4): -math.inf}}, "finite"),
                      ({"sequence_bias": {(3,): "x"}}, "numbers"), ({"sequence_bias": {3: 1.0}}, "tuples"),
                      ({"sequence_bias": {(3, 99): 1.0}}, "vocabulary")]:
        with pytest.raises(ValueError, match=match):
            generate(prog, ids, **kw)
    from tensorvm import _C

    s = _C.Session(_C.Program.load(str(prog.path)))
    for kw, match in [({"bad_words_ids": np.array([[-1, 400]])}, "bad_words_ids are not all in the decoder vocab"),
                      ({"bad_words_ids": np.array([[3, -1]])}, "every bad_words_ids entry needs at least one token"),
                      ({"sequence_bias": np.array([[-np.inf, 3, 4]], np.float32)}, "needs a finite bias")]:
        with pytest.raises(_C.VMError, match=match):
            s.run_named("generate", {"input_ids": ids, **kw})
    # the program's form is accepted from Python as is
    a = generate(prog, ids, bad_words_ids=np.array([[-1, 7], [5, 6]]), sequence_bias=np.array([[1.5, -1, 4]], "f4"))
    b = generate(prog, ids, bad_words_ids=[[7], [5, 6]], sequence_bias={(4,): 1.5})
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_replay_matches_vm(root, num_beams):
    """The Python replay runs the same program text: same tokens, logits within 1e-4."""
    _, prog = imported("tiny-marian", root)
    ids, mask = source_batches(prog, 11, 2, 1)[0]
    kw = dict(num_beams=num_beams, bad_words_ids=[[13, 26], [4], [26, 28, 36]], max_new_tokens=8,
              sequence_bias={(35, 9): 2.0, (7,): -1.0, (3, 5, 7): 0.5}, eos_token_id=[0, 22], output_logits=True)
    a, b = generate(prog, ids, mask, **kw), generate(prog, ids, mask, engine="replay", **kw)
    np.testing.assert_array_equal(a.sequences, b.sequences)
    np.testing.assert_allclose(np.stack(a.logits), np.stack(b.logits), atol=1e-4, rtol=0)
