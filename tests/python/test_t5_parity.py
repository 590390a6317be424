"""T5 against transformers itself, for v1.0 (relu, logits from the tied embedding
scaled by d_model**-0.5) and v1.1 / flan-t5 (gated-gelu, untied lm_head): encoder
states and the logits of decode steps close, generate token-exact (greedy, beam
search with several returned sequences, a decoder prompt prefilled in one pass) on
seeded random-weight checkpoints of odd sizes (heads x d_kv != d_model, 8 buckets up
to distance 20) with a padded batch whose sources and targets run past max_distance;
the Python replay of the program agrees with the VM; text in, text out with the
checkpoint's T5 tokenizer."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tensorvm
from parity_helpers import assert_encoder_states, assert_step_logits, logits_tol
from pyc_helpers import import_checkpoint, torch_generate
from tensorvm import _C

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
if str(_FIXTURES) not in sys.path:
    sys.path.insert(0, str(_FIXTURES))

import random_checkpoints  # noqa: E402

NAMES = ("t5-relu-tied", "t5-gated-untied")
MT5 = "mt5-gated"  # T5 v1.1 under MT5ForConditionalGeneration: the parity tests only
# 26 > max_distance: the encoder's far buckets; 52 query rows: the attention op's blocked path
SOURCE_LENGTHS = (52, 9, 3, 26)


@pytest.fixture(scope="module", params=NAMES)
def case(request, tmp_path_factory):
    return import_checkpoint(request.param, tmp_path_factory)


@pytest.fixture(scope="module", params=(*NAMES, MT5))
def any_case(request, tmp_path_factory):
    return import_checkpoint(request.param, tmp_path_factory)


def _batch(seed=0, lengths=SOURCE_LENGTHS, vocab=103):
    """Right-padded sources (pad 0) ending with </s> (1), of differing lengths."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), max(lengths)), np.int64)
    for i, n in enumerate(lengths):
        ids[i, :n - 1] = rng.integers(2, vocab, n - 1)
        ids[i, n - 1] = 1
    return ids, (np.arange(ids.shape[1])[None] < np.array(lengths)[:, None]).astype(np.int64)


def hf_generate(model, ids, mask, **kw):
    """model.generate with a cache that grows per layer: transformers 5 sizes its
    default cache from config.num_layers, the encoder's, and fails when the decoder
    has more layers. The cache holds K/V only; it changes no result. Token arrays in
    and out (the generate output object with return_dict_in_generate)."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    out = torch_generate(model, input_ids=ids, attention_mask=mask, do_sample=False,
                         past_key_values=EncoderDecoderCache(DynamicCache(), DynamicCache()), **kw)
    return out if kw.get("return_dict_in_generate") else out.numpy()


def _end_tokens(model, ids, mask):
    """The three most frequent tokens of a greedy and a beam run, used as end tokens so
    that rows and beams end at varied lengths (with random weights </s> hardly ever wins)."""
    seq = np.concatenate([hf_generate(model, ids, mask, max_new_tokens=30, num_beams=b)[:, 1:] for b in (1, 4)])
    values, counts = np.unique(seq, return_counts=True)
    return [int(v) for v in values[np.argsort(-counts, kind="stable")[:3]]]


def test_encoder_states(any_case):
    prog, model = any_case
    ids, mask = _batch()
    assert_encoder_states(prog, model, ids, mask, atol=1e-4)


def test_decode_step_and_prefill_logits(any_case):
    """Teacher-forced logits of 36 decode steps (past the decoder's max_distance), driven
    step by step as a C++ app would; and decode_step after a prefill of the first 34."""
    prog, model = any_case
    ids, mask = _batch(seed=1)
    seq = np.concatenate([np.zeros((ids.shape[0], 1), np.int64),
                          np.random.default_rng(2).integers(2, 103, (ids.shape[0], 35))], 1)
    with torch.no_grad():
        want = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                     decoder_input_ids=torch.tensor(seq)).logits.numpy()
    assert_step_logits(prog, ids, mask, seq, want, prefilled=34)


@pytest.mark.parametrize("options", [{}, {"num_beams": 4}, {"num_beams": 4, "num_return_sequences": 2},
                                     {"num_beams": 3, "length_penalty": 0.5}],
                         ids=["greedy", "beam4", "beam4-return2", "beam3-lp"])
def test_generate(any_case, options):
    prog, model = any_case
    ids, mask = _batch()
    kw = dict(max_new_tokens=28, eos_token_id=_end_tokens(model, ids, mask), **options)
    want = hf_generate(model, ids, mask, **kw)
    got = prog.generate(ids, mask, **kw)
    np.testing.assert_array_equal(got, want)
    if options:  # the checkpoint's own end token too (rows run to max_new_tokens)
        np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=24, **options),
                                      hf_generate(model, ids, mask, max_new_tokens=24, **options))


def test_generate_scores(case):
    """Beam search's sequences_scores and greedy's per-step scores within 1e-4."""
    prog, model = case
    ids, mask = _batch(seed=3)
    for options in ({"num_beams": 4}, {}):
        want = hf_generate(model, ids, mask, max_new_tokens=10, output_scores=True, return_dict_in_generate=True,
                           **options)
        got = prog.generate(ids, mask, max_new_tokens=10, output_scores=True, **options)
        np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
        if options:
            np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(), atol=1e-4, rtol=0)
        else:
            scores = torch.stack(want.scores).numpy()
            np.testing.assert_allclose(np.stack(got.scores), scores, atol=logits_tol(scores), rtol=0)


@pytest.mark.filterwarnings("ignore:Using the model-agnostic default")
def test_checkpoint_defaults(case):
    """No options: the checkpoint's generation_config, none set here, so transformers'
    defaults (greedy, max_length 21 for an encoder-decoder)."""
    prog, model = case
    ids, mask = _batch(seed=8)
    np.testing.assert_array_equal(prog.generate(ids, mask), hf_generate(model, ids, mask))


def test_merged_projections_are_covered(tmp_path_factory):
    """The mT5 fixture's q/k/v are 256 wide, so import's optimize merges them (one linear
    for q+k+v, one for the cross-attention's k+v): the parity tests above run that path."""
    prog, _ = import_checkpoint(MT5, tmp_path_factory)
    text = (Path(prog.path) / "program.py").read_text()
    assert "SelfAttention.q+k+v.weight" in text and "EncDecAttention.k+v.weight" in text


def test_decoder_prompt_prefilled(case):
    """decoder_input_ids [start, a, b, c]: the prompt goes through prefill in one pass
    (the causal position bias of four positions), then decode steps."""
    prog, model = case
    ids, mask = _batch(seed=4)
    prompt = np.array([[0, 7, 8, 9], [0, 50, 2, 3], [0, 11, 11, 11], [0, 90, 91, 92]])
    for options in ({}, {"num_beams": 2}):
        want = hf_generate(model, ids, mask, max_new_tokens=12, decoder_input_ids=prompt, **options)
        np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=12, decoder_input_ids=prompt,
                                                    **options), want)


def test_left_padded_sources(case):
    """T5 has no absolute positions, so left padding is as good as right padding; the
    position bias still counts from the first slot, as transformers' does."""
    prog, model = case
    ids, mask = _batch(seed=5)
    ids, mask = ids[:, ::-1].copy(), mask[:, ::-1].copy()
    np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=10, num_beams=2),
                                  hf_generate(model, ids, mask, max_new_tokens=10, num_beams=2))


def test_replay_matches_vm(case):
    """The program replayed line by line with the numpy reference ops."""
    prog, _ = case
    ids, mask = _batch(seed=6, lengths=(5, 3))
    for options in ({}, {"num_beams": 2}):
        vm = prog.generate(ids, mask, max_new_tokens=4, **options)
        np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=4, engine="replay", **options), vm)
    np.testing.assert_allclose(prog.replay("encode", ids, mask), prog.run("encode", ids, mask), atol=1e-5, rtol=0)


def test_import_meta_and_refusals(case, tmp_path):
    from tensorvm.pycompiler.importers import UnsupportedConfig

    prog, model = case
    meta = prog.meta
    assert meta["model_type"] == model.config.model_type and meta["is_encoder_decoder"] is True
    assert (meta["decoder_start_token_id"], meta["pad_token_id"], meta["eos_token_id"]) == (0, 0, 1)
    tied = meta["tied_weights"]
    assert tied["encoder.embed_tokens.weight"] == tied["decoder.embed_tokens.weight"] == "shared.weight"
    assert ("lm_head.weight" in tied) == (not model.config.is_gated_act)
    source = Path(meta["source"])
    for change, match in (({"feed_forward_proj": "gated-swishy"}, "dense_act_fn 'swishy'"),
                          ({"relative_attention_max_distance": 2}, "does not put every longer distance")):
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(source, bad)
        config = json.loads((bad / "config.json").read_text())
        config.update(change)
        config.pop("dense_act_fn", None)
        (bad / "config.json").write_text(json.dumps(config))
        with pytest.raises((UnsupportedConfig, ValueError), match=match):
            tensorvm.import_hf(bad, tmp_path / "bad.tvm")


def test_int8_import_runs(case, tmp_path):
    """quantize="int8": every q/k/v/o, wi/wo and the output matrix as int8 rows."""
    prog, model = case
    out = tensorvm.import_hf(Path(prog.meta["source"]), tmp_path / "q8.tvm", quantize="int8")
    q8 = tensorvm.load(out)
    ids, mask = _batch(seed=7)
    seq = q8.generate(ids, mask, max_new_tokens=6, num_beams=2)
    assert seq.shape[0] == ids.shape[0] and seq[:, 0].tolist() == [0] * ids.shape[0]
    used = {op for f in q8.module.functions for op in f.op_counts()}
    assert "linear_int8" in used and "linear" not in used


needs_text = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")


def _with_tokenizer(name: str, out: Path, extra_ids: int) -> Path:
    """The fixture `name`'s architecture, random weights, over a T5Tokenizer trained here
    (320 pieces + `extra_ids` sentinels; mT5's has none)."""
    import transformers
    from text_fixtures import make_t5_tokenizer

    model_class, config_class, config_kw, gen_kw = random_checkpoints.CONFIGS[name]
    tok_dir = make_t5_tokenizer(out / "tok", extra_ids=extra_ids)
    vocab = len(transformers.T5Tokenizer.from_pretrained(tok_dir))
    config = getattr(transformers, config_class)(**{**config_kw, "vocab_size": vocab})
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    random_checkpoints._randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(**gen_kw, max_length=16)
    ckpt = out / "ckpt"
    model.save_pretrained(ckpt)
    for f in tok_dir.iterdir():
        if f.is_file():
            shutil.copy(f, ckpt / f.name)
    return ckpt


@needs_text
@pytest.mark.parametrize("name, extra_ids", [("t5-relu-tied", 100), (MT5, 0)])
def test_translate_text_in_text_out(tmp_path, name, extra_ids):
    """import-hf carries the T5 tokenizer (t5-spm; mT5's is the same class); translate
    equals generate + batch_decode(skip_special_tokens=True), in Python and in tensorvm-run."""
    import transformers
    from pyc_helpers import run_cli

    ckpt = _with_tokenizer(name, tmp_path, extra_ids)
    prog = tensorvm.load(tensorvm.import_hf(ckpt, tmp_path / "t5.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "t5-spm"
    tok = transformers.AutoTokenizer.from_pretrained(ckpt)
    model = getattr(transformers, random_checkpoints.CONFIGS[name][0]).from_pretrained(
        ckpt, attn_implementation="eager").eval()
    texts = ["translate English to French: The cat sat.", "", "Le chat ... «très» heureux!"]
    for options in ({}, {"num_beams": 3}):
        batch = tok(texts, return_tensors="np", padding=True)
        want = tok.batch_decode(hf_generate(model, batch["input_ids"], batch["attention_mask"], **options),
                                skip_special_tokens=True)
        assert prog.translate(texts, **options) == want
    out = run_cli(prog.path, "translate", "--text", "\n".join(texts)).stdout.decode()
    assert out.split("\n")[:-1] == [prog.translate([t])[0] for t in texts]
