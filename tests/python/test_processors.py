"""Logits processors and sampling inside the program, against transformers.

Deterministic processors (repetition_penalty, no_repeat_ngram_size,
forced_bos_token_id, suppress_tokens, min_length / min_new_tokens), each on its own,
with greedy and beam search: token-exact sequences, sequences_scores and per-step
processed scores within 1e-4. The sampling warpers (temperature, top_k, top_p) are
checked on the first step's processed scores, where transformers' and the program's
inputs are the same whatever was drawn. Sampling itself uses the program's seeded
generator (not torch's stream): checked for determinism, VM == replay, and its
statistics.
"""
import numpy as np
import pytest

from marian_fixtures import hf, imported
from parity_helpers import STATS, compare, source_batches
from tensorvm.pycompiler.generation import generate

OPUS = "opus-mt-en-fr-random"
TINY = "tiny-marian"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


PROCESSORS = [
    {"repetition_penalty": 1.8},
    {"repetition_penalty": 0.7},
    {"no_repeat_ngram_size": 2},
    {"no_repeat_ngram_size": 1},
    {"forced_bos_token_id": 5},
    {"suppress_tokens": [3, 7, 11, 20]},
    {"min_new_tokens": 9},
    {"min_length": 7},
    {"begin_suppress_tokens": list(range(3, 20))},
    {"begin_suppress_tokens": list(range(3, 20)), "forced_bos_token_id": 5},
    {"forced_eos_token_id": 7, "max_new_tokens": 5},
]


def _name(o):
    return ",".join(f"{k}={v}" for k, v in o.items())


@pytest.mark.parametrize("num_beams", [1, 4])
@pytest.mark.parametrize("options", PROCESSORS, ids=_name)
def test_tiny_processor(root, options, num_beams):
    ckpt, prog = imported(TINY, root)
    assert compare(ckpt, prog, source_batches(prog, 3, 3, 2), scores=True, num_beams=num_beams, **options) == 0


@pytest.mark.parametrize("options", [{"repetition_penalty": 1.3, "num_beams": 1}, {"no_repeat_ngram_size": 2},
                                     {"min_new_tokens": 4, "num_beams": 1}], ids=_name)
def test_opus_shaped_processor(root, options):
    ckpt, prog = imported(OPUS, root)
    assert compare(ckpt, prog, source_batches(prog, 8, 3, 1, max_len=20), max_new_tokens=5, **options) == 0


def test_processors_together(root):
    ckpt, prog = imported(TINY, root)
    assert compare(ckpt, prog, source_batches(prog, 4, 3, 2), scores=True, num_beams=3, repetition_penalty=1.2,
                   no_repeat_ngram_size=3, suppress_tokens=[5], min_new_tokens=3) == 0


WARPERS = [
    {"temperature": 0.7},
    {"temperature": 1.6, "top_k": 0},
    {"top_k": 5},
    {"top_p": 0.8, "top_k": 0},
    {"top_p": 0.5},
    {"temperature": 0.5, "top_k": 12, "top_p": 0.9},
    {"min_p": 0.1, "top_k": 0},
    {"min_p": 0.3, "temperature": 1.5},
    {"typical_p": 0.7, "top_k": 0},
    {"typical_p": 0.3},
    {"epsilon_cutoff": 0.02, "top_k": 0},
    {"epsilon_cutoff": 0.2},
]


@pytest.mark.parametrize("num_beams", [1, 3])
@pytest.mark.parametrize("options", WARPERS, ids=_name)
def test_sampling_warpers_first_step(root, options, num_beams):
    """The processed scores transformers samples from at the first step (the same
    inputs for both, whatever is drawn), -inf pattern included."""
    ckpt, prog = imported(TINY, root)
    for ids, mask in source_batches(prog, 9, 3, 2):
        want = hf.generate(ckpt, ids, mask, with_scores=True, do_sample=True, num_beams=num_beams, max_new_tokens=1,
                           **options)["scores"][0]
        got = generate(prog, ids, mask, do_sample=True, num_beams=num_beams, max_new_tokens=1, output_scores=True,
                       seed=1, **options).scores[0]
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), finite)
        np.testing.assert_allclose(got[finite], want[finite], atol=1e-4, rtol=0)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_sampling_is_seeded_and_replays(root, num_beams):
    _, prog = imported(TINY, root)
    (ids, mask), = source_batches(prog, 1, 3, 1, max_len=6)
    opts = dict(do_sample=True, num_beams=num_beams, temperature=1.5, top_k=0, max_new_tokens=8)
    a = generate(prog, ids, mask, seed=7, **opts)
    np.testing.assert_array_equal(a, generate(prog, ids, mask, seed=7, **opts))
    runs = [generate(prog, ids, mask, seed=s, **opts) for s in range(8)]
    assert len({r.tobytes() + bytes(r.shape) for r in runs}) > 1, "different seeds should draw differently"
    np.testing.assert_array_equal(a, generate(prog, ids, mask, seed=7, engine="replay", **opts))


def test_sampling_statistics(root):
    """First tokens drawn with num_return_sequences rows per sentence follow softmax of
    the processed scores; top_k=1 sampling is greedy search."""
    _, prog = imported(TINY, root)
    (ids, mask), = source_batches(prog, 2, 1, 1, max_len=6)
    n = 1500
    out = generate(prog, ids, mask, do_sample=True, num_beams=1, num_return_sequences=n, max_new_tokens=1,
                   temperature=2.0, seed=3, output_scores=True)
    probs = np.exp(out.scores[0][0] - out.scores[0][0].max())
    probs /= probs.sum()
    freq = np.bincount(out.sequences[:, 1], minlength=probs.size) / n
    assert np.abs(freq - probs).max() < 0.04
    assert (freq[probs == 0] == 0).all()
    greedy = generate(prog, ids, mask, num_beams=1)
    np.testing.assert_array_equal(generate(prog, ids, mask, do_sample=True, num_beams=1, top_k=1, seed=5), greedy)


def test_option_errors(root):
    _, prog = imported(TINY, root)
    ids = np.array([[5, 6, 0]])
    cases = [
        ({"num_return_sequences": 2, "num_beams": 1}, ValueError, "greedy search"),
        ({"num_return_sequences": 5, "num_beams": 4}, ValueError, "at most num_beams"),
        ({"early_stopping": "always"}, ValueError, "early_stopping"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"temperature": 0.0, "do_sample": True}, ValueError, "temperature"),
        ({"num_beam_groups": 2}, ValueError, "group beam search"),
        ({"bad_words_ids": [[3, 99]]}, ValueError, "vocabulary"),
        ({"nonsense": 1}, TypeError, "unknown option"),
        ({"suppress_tokens": [99]}, ValueError, "vocabulary"),
        ({"max_new_tokens": 0}, ValueError, "at least 1"),
        ({"min_p": 1.5}, ValueError, "min_p must be in \\[0, 1\\]"),
        ({"typical_p": 0.0}, ValueError, "typical_p must be in \\(0, 1\\]"),
        ({"epsilon_cutoff": 1.0}, ValueError, "epsilon_cutoff must be in \\[0, 1\\)"),
        ({"forced_eos_token_id": 99}, ValueError, "vocabulary"),
        ({"begin_suppress_tokens": [99]}, ValueError, "vocabulary"),
    ]
    for kw, exc, match in cases:
        with pytest.raises(exc, match=match):
            generate(prog, ids, **kw)


def test_program_checks_options_itself(root):
    """A C++ caller gets the same refusals from the program (no Python wrapper)."""
    from tensorvm import _C

    _, prog = imported(TINY, root)
    s = _C.Session(_C.Program.load(str(prog.path)))
    ids = np.array([[5, 6, 0]])
    for kw, match in [({"num_beams": 2, "num_return_sequences": 3}, "at most num_beams"),
                      ({"num_beams": 1, "num_return_sequences": 2}, "greedy search"),
                      ({"early_stopping": "sometimes"}, "early_stopping must be one of"),
                      ({"num_beams": 0}, "num_beams must be at least 1"),
                      ({"max_length": 1}, "max_length must be at least 2"),
                      ({"typical_p": 0.0}, "typical_p must be in"), ({"min_p": 2.0}, "min_p must be in"),
                      ({"epsilon_cutoff": -0.5}, "epsilon_cutoff must be in"),
                      ({"forced_eos_token_id": 400}, "forced_eos_token_id is not in the decoder vocabulary"),
                      ({"suppress_tokens": np.array([3, 400])}, "scatter")]:
        with pytest.raises(_C.VMError, match=match):
            s.run_named("generate", {"input_ids": ids, **kw})
    out = s.run_named("generate", {"input_ids": ids, "early_stopping": "never", "num_beams": 2, "max_new_tokens": 3})
    assert out[0].shape[0] == 1 and out[1].shape == (1,) and out[2] is None


def test_checkpoint_generation_config_gives_the_defaults(tmp_path):
    """Processors set in a checkpoint's generation_config are imported as generate's
    defaults (no longer refused) and used when the caller passes nothing."""
    import shutil

    import tensorvm
    from transformers import GenerationConfig

    from tensorvm.pycompiler.import_hf import import_hf

    ckpt = tmp_path / "ckpt"
    shutil.copytree(hf.checkpoint_dir("tiny-untied"), ckpt)
    gen = GenerationConfig.from_pretrained(ckpt)
    gen.update(num_beams=3, length_penalty=0.6, early_stopping="never", repetition_penalty=1.4,
               no_repeat_ngram_size=2, suppress_tokens=[4, 9], min_length=5, max_length=12,
               begin_suppress_tokens=[5, 6, 7], forced_eos_token_id=3)
    gen.save_pretrained(ckpt)
    import_hf(ckpt, tmp_path / "m.tvm")
    prog = tensorvm.load(tmp_path / "m.tvm")
    assert prog.meta["generation"]["early_stopping"] == "never" and prog.meta["generation"]["suppress_tokens"] == [4, 9]
    batches = source_batches(prog, 6, 3, 2)
    for ids, mask in batches:
        want = hf.generate(ckpt, ids, mask, with_scores=True)
        got = generate(prog, ids, mask, output_scores=True)
        np.testing.assert_array_equal(got.sequences, want["sequences"])
        np.testing.assert_allclose(got.sequences_scores, want["sequences_scores"], atol=1e-4)
    assert compare(ckpt, prog, batches, num_beams=1, repetition_penalty=1.0, no_repeat_ngram_size=0) == 0
    # the sampling warpers of a generation_config, on the first step's processed scores
    gen.update(do_sample=True, typical_p=0.6, min_p=0.05, epsilon_cutoff=0.01, top_k=0)  # beam sampling
    gen.save_pretrained(ckpt)
    import_hf(ckpt, tmp_path / "s.tvm")
    prog = tensorvm.load(tmp_path / "s.tvm")
    for ids, mask in batches:
        want = hf.generate(ckpt, ids, mask, with_scores=True, max_new_tokens=1)["scores"][0]
        got = generate(prog, ids, mask, max_new_tokens=1, output_scores=True).scores[0]
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], atol=1e-4, rtol=0)


def test_report():
    """Not a check: prints what the parity tests compared (pytest -s)."""
    print("\nparity so far:", STATS)
