"""Decoder prompts (generate(..., decoder_input_ids=P)) against transformers.

P is [batch, p], each row starting with decoder_start_token_id and otherwise
different per row. The program prefills positions 0..p-2 in one pass (one call
per layer over all of them) and decodes on from the last prompt token; the
sequences must equal transformers' generate(..., decoder_input_ids=P) token for
token (beam search: up to float ties, as in test_beam_parity), with
sequences_scores and per-step scores within 1e-4. Cases: greedy and 4 beams at
batch 1 and 3, num_return_sequences > 1 (beam search, and sampling made
deterministic with top_k=1), lengths counted with the prompt (max_new_tokens,
min_new_tokens), processors that read the prompt, on the trained tiny
checkpoint, the config variants and the opus-mt-en-fr-shaped random one.
"""
import numpy as np
import pytest
import torch

from marian_fixtures import hf, imported
from parity_helpers import compare, source_batches
from tensorvm.pycompiler.generation import generate

OPUS = "opus-mt-en-fr-random"
TINY = "tiny-marian"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def _prompt(prog, batch: int, length: int, seed: int) -> torch.Tensor:
    """[batch, length]: the decoder start token, then random tokens (other in every row)."""
    rng = np.random.default_rng(seed)
    start, pad = prog.meta["decoder_start_token_id"], prog.meta["pad_token_id"]
    body = rng.integers(2, min(pad, prog.meta["decoder_vocab_size"]), size=(batch, length - 1))
    return torch.tensor(np.concatenate([np.full((batch, 1), start), body], axis=1), dtype=torch.long)


def _check(name, root, batch, length, seed=0, count=2, scores=True, **options):
    ckpt, prog = imported(name, root)
    for i, (ids, mask) in enumerate(source_batches(prog, seed, batch, count)):
        prompt = _prompt(prog, batch, length, seed + 100 * i)
        if batch > 1:
            assert len({tuple(r) for r in prompt.tolist()}) == batch, "the rows' prompts must differ"
        ties = compare(ckpt, prog, [(ids, mask)], scores=scores, decoder_input_ids=prompt, **options)
        assert ties == 0 or options.get("num_beams", 1) > 1


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("length", [2, 5])
def test_tiny_greedy(root, batch, length):
    _check(TINY, root, batch, length, seed=batch + length, num_beams=1, max_new_tokens=10)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("length", [3, 6])
def test_tiny_beam4(root, batch, length):
    _check(TINY, root, batch, length, seed=10 + batch + length, num_beams=4, max_new_tokens=10)


@pytest.mark.parametrize("num_beams, n", [(4, 2), (4, 4), (3, 3)])
def test_tiny_num_return_sequences(root, num_beams, n):
    _check(TINY, root, 3, 4, seed=30 + n, num_beams=num_beams, num_return_sequences=n, max_new_tokens=8)


def test_tiny_sampling_num_return_sequences(root):
    """Sampling with top_k=1 draws the best token whatever the generator: comparable
    with transformers' torch stream, and it runs the sampling path with 2 rows per input.
    num_beams=1: the checkpoint's default of 4 would make it beam sampling, where
    transformers draws 2 x beams candidates from fewer tokens of nonzero probability, and
    which others it draws then depends on torch's generator (test_processors covers beam
    sampling where the draw is well defined)."""
    _check(TINY, root, 3, 4, seed=40, scores=False, do_sample=True, top_k=1, num_return_sequences=2, max_new_tokens=8,
           num_beams=1)


@pytest.mark.parametrize("options", [{"max_length": 9}, {"min_new_tokens": 6, "max_new_tokens": 9},
                                     {"min_length": 8}, {"repetition_penalty": 1.8},
                                     {"no_repeat_ngram_size": 2}, {"length_penalty": 2.0, "early_stopping": "never"},
                                     {"begin_suppress_tokens": list(range(3, 20))}],
                         ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("num_beams", [1, 4])
def test_tiny_lengths_and_processors(root, options, num_beams):
    if num_beams == 1 and "length_penalty" in options:
        pytest.skip("a beam option")
    _check(TINY, root, 3, 4, seed=50, num_beams=num_beams, **options)


@pytest.mark.parametrize("name", ["tiny-sepvocab-gelu", "tiny-untied", "tiny-sepvocab-untied"])
@pytest.mark.parametrize("num_beams", [1, 4])
def test_config_variants(root, name, num_beams):
    _check(name, root, 3, 4, seed=60, count=1, num_beams=num_beams, max_new_tokens=6)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_opus_shape(root, num_beams):
    _check(OPUS, root, 2, 4, seed=70, count=1, scores=False, num_beams=num_beams, max_new_tokens=3)


def test_prefill_is_one_pass(root):
    """prefill runs each layer once over all prompt positions, and leaves the cache as
    feeding the prompt token by token does (the next logits agree)."""
    _, prog = imported(TINY, root)
    layers = hf.load_model(hf.checkpoint_dir(TINY)).config.decoder_layers
    calls = prog.module.function("prefill").op_counts()
    assert calls.get("prefill_layer") == layers and "decoder_layer" not in calls, calls
    ids, mask = source_batches(prog, 80, 3, 1)[0]
    prompt = _prompt(prog, 3, 6, 80).numpy()
    states, smask = prog.run("encode", ids, mask), prog.run("source_mask", mask)
    one = prog.run("prefill", prog.run("init_cache", states, 3, 16), prompt[:, :5], smask)
    stepped = prog.run("init_cache", states, 3, 16)
    for pos in range(5):
        prog.run("decode_step", stepped, prompt[:, pos:pos + 1], smask, pos)
    want = prog.run("decode_step", stepped, prompt[:, 5:6], smask, 5)
    got = prog.run("decode_step", one, prompt[:, 5:6], smask, 5)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)


def test_replay_matches_vm(root):
    """The prefill path replays in Python (reference ops) to the same sequences."""
    _, prog = imported(TINY, root)
    ids, mask = source_batches(prog, 90, 2, 1)[0]
    prompt = _prompt(prog, 2, 4, 90).numpy()
    for beams in (1, 3):
        vm = generate(prog, ids, mask, decoder_input_ids=prompt, num_beams=beams, max_new_tokens=5)
        rp = generate(prog, ids, mask, decoder_input_ids=prompt, num_beams=beams, max_new_tokens=5, engine="replay")
        np.testing.assert_array_equal(vm, rp)


@pytest.mark.parametrize("prompt, message", [
    (np.zeros((2, 3), np.int64), "one row"),
    (np.zeros((3, 0), np.int64), "decoder_input_ids has no tokens"),
    (np.zeros((3, 3), np.float32), "int array"),
])
def test_bad_prompts(root, prompt, message):
    _, prog = imported(TINY, root)
    ids, mask = source_batches(prog, 1, 3, 1)[0]
    with pytest.raises(ValueError, match=message):
        generate(prog, ids, mask, decoder_input_ids=prompt)


def test_prompt_too_long_for_max_length(root):
    _, prog = imported(TINY, root)
    ids, mask = source_batches(prog, 1, 3, 1)[0]
    with pytest.raises(ValueError, match="greater than the length of decoder_input_ids"):
        generate(prog, ids, mask, decoder_input_ids=_prompt(prog, 3, 6, 1).numpy(), max_length=6)


def test_in_program_checks(root):
    """A C++ or CLI caller gets the same refusals from the program itself."""
    import tensorvm

    _, prog = imported(TINY, root)
    ids, mask = source_batches(prog, 1, 3, 1)[0]
    params = [p.name for p in prog.module.function("generate").params]
    args = {p: None for p in params}
    args.update(input_ids=ids, attention_mask=mask, decoder_input_ids=np.zeros((2, 3), np.int64))
    with pytest.raises(tensorvm.VMError, match="one row per input_ids row"):
        prog.run("generate", *[args[p] for p in params])
    args.update(decoder_input_ids=_prompt(prog, 3, 6, 1).numpy(), max_length=6)
    with pytest.raises(tensorvm.VMError, match="greater than the length of decoder_input_ids"):
        prog.run("generate", *[args[p] for p in params])


def test_both_clis_take_a_prompt(root, tmp_path, capsys):
    """--decoder-ids fills decoder_input_ids in `tensorvm run` and `tensorvm-run` alike,
    and both give what Program.generate gives."""
    import subprocess

    from pyc_helpers import tensorvm_run_tool
    from tensorvm.pycompiler.cli import main

    _, prog = imported(TINY, root)
    start = prog.meta["decoder_start_token_id"]
    rows, prompt = "5 6 7 2; 8 9 2", f"{start} 4 9; {start} 7 7"
    opts = ["--ids", rows, "--decoder-ids", prompt, "--arg", "max_new_tokens=6", "--arg", "num_beams=3"]
    assert main(["run", str(prog.path), "generate", *opts, "--outputs", str(tmp_path / "py.npz")]) == 0
    res = subprocess.run([tensorvm_run_tool(), str(prog.path), "generate", *opts, "--outputs", str(tmp_path / "c.npz")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    ids = np.array([[5, 6, 7, 2], [8, 9, 2, prog.meta["pad_token_id"]]])
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])
    want = generate(prog, ids, mask, decoder_input_ids=np.array([[start, 4, 9], [start, 7, 7]]), max_new_tokens=6,
                    num_beams=3)
    for name in ("py.npz", "c.npz"):
        with np.load(tmp_path / name) as d:
            np.testing.assert_array_equal(d["arr_0"], want)
    ragged = ["--ids", rows, "--decoder-ids", f"{start} 4; {start}"]
    assert main(["run", str(prog.path), "generate", *ragged]) == 1
    assert "--decoder-ids: every row needs the same number of tokens" in capsys.readouterr().err
    res = subprocess.run([tensorvm_run_tool(), str(prog.path), "generate", *ragged], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 1 and "--decoder-ids: every row needs the same number of tokens" in res.stderr
