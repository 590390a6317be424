"""BART, MBart and Pegasus against transformers itself, on seeded random-weight
checkpoints of odd sizes (tests/fixtures/random_checkpoints.py) with a padded batch
of differing source lengths: encoder states and teacher-forced decode-step logits
close, generate token-exact with each checkpoint's own generation_config (bart-cnn:
forced <s>, beam 4, length_penalty 2, no 3-gram repeats, min_length, early_stopping)
and with greedy / beam overrides, the target language forced at run time (MBart),
a decoder prompt prefilled in one pass; the Python replay agrees with the VM."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tensorvm
from parity_helpers import assert_encoder_states, assert_step_logits
from tensorvm import _C

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
if str(_FIXTURES) not in sys.path:
    sys.path.insert(0, str(_FIXTURES))

import random_checkpoints  # noqa: E402

NAMES = ("bart-cnn", "mbart-odd", "pegasus-odd")
SOURCE_LENGTHS = (11, 4, 7, 2)
_LOADED = {}


@pytest.fixture(scope="module", params=NAMES)
def case(request, tmp_path_factory):
    """(program, transformers model) of a fixture checkpoint, imported once per session."""
    import transformers

    name = request.param
    if name not in _LOADED:
        path = random_checkpoints.ensure(name)
        out = tmp_path_factory.mktemp(name) / "model.tvm"
        tensorvm.import_hf(path, out)
        model_class = getattr(transformers, random_checkpoints.CONFIGS[name][0])
        _LOADED[name] = tensorvm.load(out), model_class.from_pretrained(path, attn_implementation="eager").eval()
    return _LOADED[name]


def _batch(model, seed=0, lengths=SOURCE_LENGTHS):
    """Right-padded sources ending with the end token, of differing lengths."""
    cfg = model.config
    rng = np.random.default_rng(seed)
    ids = np.full((len(lengths), max(lengths)), cfg.pad_token_id, np.int64)
    for i, n in enumerate(lengths):
        ids[i, :n - 1] = rng.integers(3, cfg.vocab_size, n - 1)
        ids[i, n - 1] = cfg.eos_token_id
    return ids, (np.arange(ids.shape[1])[None] < np.array(lengths)[:, None]).astype(np.int64)


def _hf(model, ids, mask, **kw):
    kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with torch.no_grad():
        return model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False,
                              **kw).numpy()


def _end_tokens(model, ids, mask):
    """Three frequent tokens of a greedy and a beam run, used as end tokens so that rows
    and beams end at varied lengths (with random weights </s> hardly ever wins)."""
    seq = np.concatenate([_hf(model, ids, mask, max_new_tokens=20, num_beams=b, no_repeat_ngram_size=0,
                              min_length=0)[:, 2:] for b in (1, 4)])
    values, counts = np.unique(seq, return_counts=True)
    return [int(v) for v in values[np.argsort(-counts, kind="stable")[:3]]]


def test_encoder_states(case):
    prog, model = case
    ids, mask = _batch(model)
    assert_encoder_states(prog, model, ids, mask)


def test_decode_step_and_prefill_logits(case):
    """Teacher-forced logits of 20 decode steps driven one at a time, as a C++ app
    would; and decode_step after a prefill of the first 18."""
    prog, model = case
    ids, mask = _batch(model, seed=1)
    start = model.config.decoder_start_token_id
    seq = np.concatenate([np.full((ids.shape[0], 1), start, np.int64),
                          np.random.default_rng(2).integers(3, model.config.vocab_size, (ids.shape[0], 19))], 1)
    with torch.no_grad():
        want = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                     decoder_input_ids=torch.tensor(seq)).logits.numpy()
    assert_step_logits(prog, ids, mask, seq, want, prefilled=18)


def test_checkpoint_defaults(case):
    """No options: each checkpoint's generation_config (bart-cnn's beam 4, length
    penalty 2, no 3-gram repeats, min_length 9, forced <s> and </s>)."""
    prog, model = case
    for seed in (0, 3):
        ids, mask = _batch(model, seed=seed)
        np.testing.assert_array_equal(prog.generate(ids, mask), _hf(model, ids, mask))


@pytest.mark.parametrize("options", [{"num_beams": 1}, {"num_beams": 4, "num_return_sequences": 2},
                                     {"num_beams": 3, "length_penalty": 0.5, "early_stopping": False},
                                     {"num_beams": 1, "no_repeat_ngram_size": 2, "min_length": 12}],
                         ids=["greedy", "beam4-return2", "beam3-lp-not-early", "greedy-ngram-minlen"])
def test_generate(case, options):
    """Overrides over the checkpoint's defaults, with frequent tokens as end tokens so
    that rows and beams end at varied lengths."""
    prog, model = case
    ids, mask = _batch(model)
    kw = dict(max_new_tokens=18, eos_token_id=_end_tokens(model, ids, mask), **options)
    np.testing.assert_array_equal(prog.generate(ids, mask, **kw), _hf(model, ids, mask, **kw))


def test_forced_target_language_and_prompt(case):
    """mbart-large-50 style: the target language as forced_bos_token_id at run time; and
    a decoder prompt [start, language] prefilled in one pass."""
    prog, model = case
    ids, mask = _batch(model, seed=4)
    for options in ({"forced_bos_token_id": 17}, {"forced_bos_token_id": 33, "num_beams": 3}):
        np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=10, **options),
                                      _hf(model, ids, mask, max_new_tokens=10, **options))
    start = model.config.decoder_start_token_id
    prompt = np.array([[start, 21], [start, 22], [start, 21], [start, 40]])
    for options in ({"num_beams": 1}, {"num_beams": 2}):
        kw = dict(max_new_tokens=10, decoder_input_ids=prompt, forced_bos_token_id=None, **options)
        np.testing.assert_array_equal(prog.generate(ids, mask, **kw), _hf(model, ids, mask, **kw))


def test_replay_matches_vm(case):
    """The program replayed line by line with the numpy reference ops."""
    prog, model = case
    ids, mask = _batch(model, seed=6, lengths=(5, 3))
    for options in ({"num_beams": 1}, {"num_beams": 2}):
        vm = prog.generate(ids, mask, max_new_tokens=4, **options)
        np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=4, engine="replay", **options), vm)
    np.testing.assert_allclose(prog.replay("encode", ids, mask), prog.run("encode", ids, mask), atol=1e-5, rtol=0)


def test_import_meta(case):
    prog, model = case
    meta = prog.meta
    cfg = model.config
    assert meta["model_type"] == cfg.model_type and meta["is_encoder_decoder"] is True
    assert (meta["decoder_start_token_id"], meta["pad_token_id"], meta["eos_token_id"]) == (
        cfg.decoder_start_token_id, cfg.pad_token_id, cfg.eos_token_id)
    tied = meta["tied_weights"]
    assert tied["model.encoder.embed_tokens.weight"] == tied["lm_head.weight"] == "model.shared.weight"


def test_int8_import_runs(case, tmp_path):
    """quantize="int8": every projection, fc1/fc2 and the output matrix as int8 rows."""
    prog, model = case
    q8 = tensorvm.load(tensorvm.import_hf(Path(prog.meta["source"]), tmp_path / "q8.tvm", quantize="int8"))
    ids, mask = _batch(model, seed=7)
    seq = q8.generate(ids, mask, max_new_tokens=6, num_beams=2)
    assert seq.shape[0] == ids.shape[0] and (seq[:, 0] == model.config.decoder_start_token_id).all()
    used = {op for f in q8.module.functions for op in f.op_counts()}
    assert "linear_int8" in used and "linear" not in used


needs_text = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")


@needs_text
def test_summarize_text_in_text_out(tmp_path):
    """import-hf carries BART's byte-level BPE (tokenizer.json with RobertaProcessing's
    <s> text </s>): translate (the summarize verb's shape) equals generate +
    batch_decode(skip_special_tokens=True) with the bart-cnn generation_config, in
    Python and in tensorvm-run."""
    import shutil

    import transformers
    from pyc_helpers import run_cli
    from text_fixtures import make_byte_bpe_tokenizer

    tok_dir = make_byte_bpe_tokenizer(tmp_path / "tok", "bart")
    tok = transformers.AutoTokenizer.from_pretrained(tok_dir)
    model_class, config_class, config_kw, gen_kw = random_checkpoints.CONFIGS["bart-cnn"]
    config = getattr(transformers, config_class)(**{**config_kw, "vocab_size": len(tok)})
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    random_checkpoints._randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(**gen_kw)
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    for f in tok_dir.iterdir():
        if f.is_file():
            shutil.copy(f, ckpt / f.name)
    prog = tensorvm.load(tensorvm.import_hf(ckpt, tmp_path / "bart.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "byte-level-bpe"
    texts = ["The cat sat on the mat, and then it slept.", "", "Le chat ... «très» heureux!"]
    batch = tok(texts, return_tensors="np", padding=True)
    assert batch["input_ids"][0, 0] == 0 and 2 in batch["input_ids"][0]
    for options in ({}, {"num_beams": 1}):
        want = tok.batch_decode(_hf(model, batch["input_ids"], batch["attention_mask"], **options),
                                skip_special_tokens=True)
        assert prog.translate(texts, **options) == want
    out = run_cli(prog.path, "translate", "--text", "\n".join(texts)).stdout.decode()
    assert out.split("\n")[:-1] == [prog.translate([t])[0] for t in texts]


def test_no_pad_token_pads_with_the_end_token(tmp_path):
    """A checkpoint that names no pad_token_id (config and generation_config) imports, and
    its finished rows are padded with the first end token, as transformers' generate pads
    them (_prepare_special_tokens), token for token."""
    import transformers

    model_class, config_class, config_kw, gen_kw = random_checkpoints.CONFIGS["bart-cnn"]
    config = getattr(transformers, config_class)(**{**config_kw, "pad_token_id": None})
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    random_checkpoints._randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(**{**gen_kw, "pad_token_id": None})
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    model = getattr(transformers, model_class).from_pretrained(ckpt, attn_implementation="eager").eval()
    assert model.config.pad_token_id is None and model.generation_config.pad_token_id is None
    prog = tensorvm.load(tensorvm.import_hf(ckpt, tmp_path / "bart.tvm"))
    eos = config.eos_token_id
    assert prog.meta["pad_token_id"] == (eos[0] if isinstance(eos, list) else eos)
    ids = np.array([[5, 9, 14, 7, eos], [6, 8, eos, eos, eos]], np.int64)  # the short row padded with eos
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int64)
    for options in ({"num_beams": 1, "max_new_tokens": 9}, {"num_beams": 3, "max_new_tokens": 9}):
        want = _hf(model, ids, mask, **options)
        got = np.asarray(prog.generate(ids, mask, **options))
        np.testing.assert_array_equal(got, want, err_msg=str(options))
