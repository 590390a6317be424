"""GPT-NeoX (Pythia), OPT and Phi (phi-1.5, phi-2) against transformers' own generate,
through tensorvm.testing.compare_generate: token-exact greedy and beam search with 4
beams, on left-padded batches of different prompt lengths, over seeded random-weight
checkpoints of odd sizes (tests/fixtures/random_checkpoints.py: FAMILIES_28) that cover
each family's variants (parallel and sequential residual, pre- and post-LN, projected
embeddings, grouped-query attention with q/k LayerNorms); then text in and out with the
tokenizer class transformers 5 saves for each family."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import tensorvm
from decoder_only_helpers import checkpoint, decoder_checkpoints, hf_model, random_prompts
from tensorvm.testing import compare_generate

FAMILIES = decoder_checkpoints.FAMILIES_28


@pytest.fixture(scope="module", params=FAMILIES)
def case(request, tmp_path_factory):
    name = request.param
    out = tmp_path_factory.mktemp(name) / "model.tvm"
    tensorvm.import_hf(checkpoint(name), out)
    return name, tensorvm.load(out), hf_model(name)


def test_greedy_left_padded(case):
    name, prog, model = case
    prompts = random_prompts(np.random.default_rng(1), model.config.vocab_size, [7, 3, 5])
    result = compare_generate(checkpoint(name), prog, prompts, reference=model, max_new_tokens=12)
    assert result.ok, str(result)


def test_beam_four(case):
    name, prog, model = case
    prompts = random_prompts(np.random.default_rng(2), model.config.vocab_size, [8, 3])
    result = compare_generate(checkpoint(name), prog, prompts, reference=model, max_new_tokens=10, num_beams=4,
                              num_return_sequences=4)
    assert result.ok, str(result)


def test_compare_generate_names_the_first_difference(tmp_path):
    """The helper fails when the program computes something else: transformers' model with
    one layer's MLP output zeroed gives other tokens, and it says where and by how much."""
    prog = tensorvm.load(tensorvm.import_hf(checkpoint("opt-pre"), tmp_path / "m.tvm", optimize=False))
    import copy

    changed = copy.deepcopy(hf_model("opt-pre"))
    with torch.no_grad():
        changed.model.decoder.layers[1].fc2.weight.zero_()
    result = compare_generate(checkpoint("opt-pre"), prog, [[5, 9, 3, 7], [6, 13]], reference=changed,
                              max_new_tokens=6)
    assert not result.ok
    row, position, want, got = result.first_difference
    assert want != got and position >= 4 and result.margin is not None and result.margin > 0
    assert f"row {row} differs first at position {position}" in str(result)


@pytest.mark.parametrize("model_type, fields, match", [
    ("gpt_neox", dict(hidden_size=36, num_attention_heads=3, rotary_pct=0.25), "3 rotary features per head"),
    ("phi", dict(hidden_size=40, num_attention_heads=4, partial_rotary_factor=0.5), "5 rotary features per head"),
    ("gpt_neox", dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}), "rope_type 'dynamic'"),
    ("opt", dict(hidden_size=30, num_attention_heads=4), "not divisible"),
])
def test_configs_it_does_not_compute_are_refused(model_type, fields, match):
    from transformers import AutoConfig, GenerationConfig

    from tensorvm.pycompiler.importers import UnsupportedConfig, architecture

    base = dict(vocab_size=50, num_hidden_layers=1, hidden_size=32, num_attention_heads=4)
    config = AutoConfig.for_model(model_type, **{**base, **fields})
    with pytest.raises(UnsupportedConfig, match=match):
        architecture(model_type).spec_from_config(config, GenerationConfig(eos_token_id=2))


# Text: one byte-level BPE trained on the corpus, saved by each family's own tokenizer class
# with the special tokens its checkpoints use (Pythia: <|endoftext|> and <|padding|>, NFC;
# OPT: GPT2Tokenizer prepending </s>; phi-2: CodeGenTokenizer, no padding token).
TEXT = {
    "GPTNeoX": ("GPTNeoXTokenizer", dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                         unk_token="<|endoftext|>", pad_token="<|padding|>"),
                dict(rotary_pct=0.25, intermediate_size=48)),
    "OPT": ("GPT2Tokenizer", dict(add_bos_token=True, bos_token="</s>", eos_token="</s>", unk_token="</s>",
                                  pad_token="<pad>"), dict(ffn_dim=48)),
    "Phi": ("CodeGenTokenizer", dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                     unk_token="<|endoftext|>"),
            dict(partial_rotary_factor=0.5, intermediate_size=48)),
}


@pytest.fixture(scope="module")
def bpe_files(tmp_path_factory):
    """vocab.json and merges.txt of a byte-level BPE trained on a quarter of the corpus."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import hf5_tokenizers as h5

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    specials = ["<|endoftext|>", "<|padding|>", "<s>", "<pad>", "</s>", "<unk>"]
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(h5.corpus_lines()[::4], trainer)
    out = tmp_path_factory.mktemp("bpe")
    tok.model.save(str(out))
    return out


def _text_checkpoint(family: str, bpe, out):
    """A seeded random {family}ForCausalLM over the tokenizer's vocabulary, saved with it."""
    import transformers

    class_name, options, fields = TEXT[family]
    tok = getattr(transformers, class_name).from_pretrained(bpe, **options)
    tok.save_pretrained(out)
    eos = tok.convert_tokens_to_ids(options["eos_token"])
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos
    config = getattr(transformers, family + "Config")(
        vocab_size=len(tok), hidden_size=32, num_attention_heads=4, num_hidden_layers=1,
        max_position_embeddings=64, bos_token_id=tok.bos_token_id, eos_token_id=eos, pad_token_id=pad, **fields)
    torch.manual_seed(3)
    model = getattr(transformers, family + "ForCausalLM")(config).eval()
    with torch.no_grad():  # logits far apart: no near-ties
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 2.0 / p.shape[1] ** 0.5)
    model.save_pretrained(out)
    return out


@pytest.mark.parametrize("family", sorted(TEXT))
def test_text_in_and_out(tmp_path, bpe_files, family):
    from tensorvm import _C
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not getattr(_C, "has_text", False):
        pytest.skip("tensorvm built without the text library")
    ckpt = _text_checkpoint(family, bpe_files, tmp_path / "ckpt")
    prog = tensorvm.load(tensorvm.import_hf(ckpt, tmp_path / "m.tvm", optimize=False))
    assert prog.meta["tokenizer"]["kind"] == "byte-level-bpe"
    hf_tok = AutoTokenizer.from_pretrained(ckpt, padding_side="left")
    assert type(hf_tok).__name__ == TEXT[family][0]
    if hf_tok.pad_token is None:  # phi-2's: generate pads with the end token
        hf_tok.pad_token = hf_tok.eos_token
    prompts = ["The cat sat on the", "Le chat 東京 🙂", " twelve  thirty\tand"]
    assert [prog.tokenizer.encode(p) for p in prompts] == [hf_tok(p).input_ids for p in prompts]
    model = AutoModelForCausalLM.from_pretrained(ckpt, attn_implementation="eager").eval()
    batch = hf_tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=8, do_sample=False, pad_token_id=hf_tok.pad_token_id)
    want = hf_tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    assert prog.complete(prompts, max_new_tokens=8) == want
    assert json.loads((tmp_path / "m.tvm" / "meta.json").read_text())["model_type"] == model.config.model_type
