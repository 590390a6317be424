"""Marian greedy generation (and the default beam search) in the VM against transformers' generate(), token for token.

Checkpoints are built locally (tests/fixtures/make_checkpoints.py): the
opus-mt-en-fr shape with seeded random weights, and a tiny Marian trained on a
synthetic task so that outputs end with EOS at varied lengths (trained once and
committed in tests/fixtures/data, never trained by a test run). Variants prove that
the importer reads the config (separate decoder vocabulary, gelu, untied head).
"""
from pathlib import Path

import numpy as np
import pytest

from marian_fixtures import hf, imported, random_sources
from tensorvm.pycompiler.generation import generate
from tensorvm.pycompiler.import_hf import import_hf
from tensorvm.pycompiler.importers import UnsupportedConfig

OPUS = "opus-mt-en-fr-random"
TINY = "tiny-marian"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def _vocab(prog):
    meta = prog.meta
    return meta["vocab_size"], meta["pad_token_id"], meta["eos_token_id"]


def _compare(ckpt, prog, batches, **kw):
    mismatches = []
    for ids, mask in batches:
        want = hf.greedy(ckpt, ids, mask, **kw)
        got = generate(prog, ids, mask, num_beams=1, **kw)
        if want.shape != got.shape or not (want == got).all():
            mismatches.append((ids, want, got))
    assert not mismatches, f"{len(mismatches)} of {len(batches)} batches differ; first: {mismatches[0]}"


COMMITTED = Path(__file__).resolve().parents[1] / "fixtures" / "data"


@pytest.mark.parametrize("name", [TINY, "tiny-sepvocab-gelu", "tiny-untied", "tiny-sepvocab-untied"])
def test_trained_checkpoints_are_the_committed_ones(root, name):
    """Both sides of every parity test read the committed weights (nothing is trained
    on the machine running the tests, so nothing here depends on its CPU's training)."""
    ckpt, prog = imported(name, root)
    assert ckpt == COMMITTED / name
    assert prog.meta["source"] == str((COMMITTED / name).resolve())
    assert hf.load_model(name).name_or_path == str((COMMITTED / name).resolve())


@pytest.mark.parametrize("batch, count", [(1, 26), (4, 6)])
def test_tiny_trained_greedy_matches_transformers(root, batch, count):
    ckpt, prog = imported(TINY, root)
    vocab, pad, eos = _vocab(prog)
    rng = np.random.default_rng(batch)
    batches = random_sources(rng, count, 2, pad, 12, batch, pad, eos)
    _compare(ckpt, prog, batches)
    # The trained model ends with EOS at varied lengths; make sure that really happens.
    lengths = {int((generate(prog, ids, mask, num_beams=1) != pad).sum(1).min()) for ids, mask in batches}
    assert len(lengths) > 2


@pytest.mark.parametrize("batch, count", [(1, 26), (4, 6)])
def test_opus_shaped_greedy_matches_transformers(root, batch, count):
    ckpt, prog = imported(OPUS, root)
    vocab, pad, eos = _vocab(prog)
    rng = np.random.default_rng(10 + batch)
    batches = random_sources(rng, count, 1, pad, 24, batch, pad, eos)
    _compare(ckpt, prog, batches, max_new_tokens=6)


def test_max_length_and_defaults(root):
    ckpt, prog = imported(TINY, root)
    _, pad, eos = _vocab(prog)
    ids, mask = random_sources(np.random.default_rng(3), 1, 2, pad, 10, 3, pad, eos)[0]
    for kw in ({"max_length": 4}, {"max_new_tokens": 2}, {}):
        want = hf.greedy(ckpt, ids, mask, **kw)
        got = generate(prog, ids, mask, num_beams=1, **kw)
        np.testing.assert_array_equal(got, want)


def test_first_step_logits_within_1e4(root):
    """encode / init_cache / decode_step driven step by step, as a C++ app would."""
    ckpt, prog = imported(OPUS, root)
    _, pad, eos = _vocab(prog)
    ids, mask = random_sources(np.random.default_rng(5), 1, 1, pad, 16, 2, pad, eos)[0]
    seq = generate(prog, ids, mask, num_beams=1, max_new_tokens=4)
    want = hf.next_token_logits(ckpt, ids, seq[:, :4], mask, k=4, attn_implementation="eager")
    states = prog.run("encode", ids, mask)
    source_mask = prog.run("source_mask", mask)
    cache = prog.run("init_cache", states, ids.shape[0], 16)
    for step in range(4):
        logits = prog.run("decode_step", cache, seq[:, step:step + 1], source_mask, step)
        np.testing.assert_allclose(logits, want[:, step], atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["tiny-sepvocab-gelu", "tiny-untied", "tiny-sepvocab-untied"])
def test_config_variants(root, name):
    ckpt, prog = imported(name, root)
    vocab, pad, eos = _vocab(prog)
    assert prog.meta["decoder_vocab_size"] == hf.load_model(ckpt).config.decoder_vocab_size or \
        hf.load_model(ckpt).config.share_encoder_decoder_embeddings
    rng = np.random.default_rng(7)
    batches = random_sources(rng, 5, 2, min(vocab, pad), 10, 3, pad, eos)
    _compare(ckpt, prog, batches, max_new_tokens=8)


def test_beam_is_the_default(root):
    """opus-mt's generation_config says num_beams=4: generate with no options runs beam search."""
    ckpt, prog = imported(OPUS, root)
    assert prog.meta["num_beams"] == 4
    ids = np.array([[5, 6, 7, 0]])
    want = hf.beam(ckpt, ids, np.ones_like(ids), num_beams=4, max_new_tokens=4)
    np.testing.assert_array_equal(generate(prog, ids, max_new_tokens=4), want)


def test_unsupported_configs_fail_at_import(tmp_path):
    from transformers import GenerationConfig

    ckpt = hf.checkpoint_dir("tiny-untied")
    bad = tmp_path / "ckpt"
    import shutil

    shutil.copytree(ckpt, bad)
    gen = GenerationConfig.from_pretrained(bad)
    gen.bad_words_ids = [[3, 4], [5, 400]]  # several-token entries are imported; ids past the vocabulary are not
    gen.save_pretrained(bad)
    with pytest.raises(UnsupportedConfig, match="bad_words_ids entry \\[5, 400\\] is not in the (decoder )?vocabulary"):
        import_hf(bad, tmp_path / "out.tvm")
    assert not (tmp_path / "out.tvm").exists()
    gen.bad_words_ids = None
    gen.num_beam_groups = 2
    gen.diversity_penalty = 0.5
    gen.num_beams = 4
    gen.save_pretrained(bad)
    with pytest.raises(UnsupportedConfig, match="not supported"):
        import_hf(bad, tmp_path / "out.tvm")
    with pytest.raises(FileNotFoundError, match="not a transformers checkpoint"):
        import_hf(tmp_path / "nothing", tmp_path / "out.tvm")
