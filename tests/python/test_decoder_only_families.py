"""What the Llama-family variants beyond Llama and Qwen2 add, checked where the parity
tests (test_decoder_only_parity.py) do not: Mistral's and Phi-3's sliding windows
really change the fixtures' results (so matching transformers exercises them), beam
search with 4 beams all returned, Phi-3's fused projections split on import, and text
in and out through a tokenizer.json."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import tensorvm
import text_fixtures as tf
from decoder_only_helpers import checkpoint, hf_model, hf_position_ids, left_padded, random_prompts

NEW = ("mistral-window5", "gemma-mqa", "phi3-gqa3", "qwen3-gqa3", "gemma3-window4", "smollm3-nope")


@pytest.mark.parametrize("name, window", [("mistral-window5", 5), ("phi3-gqa3", 7)])
def test_window_changes_the_fixture(tmp_path, name, window):
    model = hf_model(name)
    assert model.config.sliding_window == window
    unwindowed = copy.deepcopy(model)
    unwindowed.config.sliding_window = None
    for layer in unwindowed.model.layers:
        layer.self_attn.config.sliding_window = None
    ids, mask = left_padded(random_prompts(np.random.default_rng(7), model.config.vocab_size, [9, 4]), pad=0)
    kw = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=12, do_sample=False)
    with torch.no_grad():
        windowed, full = model.generate(**kw).numpy(), unwindowed.generate(**kw).numpy()
        full_logits = unwindowed(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                                 position_ids=torch.tensor(hf_position_ids(mask))).logits.numpy()
    assert not np.array_equal(windowed, full)
    tensorvm.import_hf(checkpoint(name), tmp_path / "m.tvm")
    prog = tensorvm.load(tmp_path / "m.tvm")
    np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=12), windowed)
    got = prog.run("forward", ids, mask)
    # the first row's last query sees 9 keys, fewer through the window: the logits must differ
    assert np.abs(got[0, -1] - full_logits[0, -1]).max() > 1e-2


@pytest.mark.parametrize("name", NEW)
def test_beam_four_returns_four(tmp_path, name):
    """Beam search with 4 beams, all 4 returned, on 2 left-padded prompts longer than
    the windows once generated, with a length penalty and an early stop."""
    model = hf_model(name)
    ids, mask = left_padded(random_prompts(np.random.default_rng(21), model.config.vocab_size, [8, 3]), pad=0)
    kw = dict(max_new_tokens=14, num_beams=4, num_return_sequences=4, length_penalty=0.7, early_stopping=True,
              do_sample=False)
    with torch.no_grad():
        ref = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), output_scores=True,
                             return_dict_in_generate=True, **kw)
    tensorvm.import_hf(checkpoint(name), tmp_path / "m.tvm")
    out = tensorvm.load(tmp_path / "m.tvm").generate(ids, mask, output_scores=True, **kw)
    np.testing.assert_array_equal(out.sequences, ref.sequences.numpy())
    np.testing.assert_allclose(out.sequences_scores, ref.sequences_scores.numpy(), atol=1e-4, rtol=0)


def test_phi3_fused_projections_are_split(tmp_path):
    tensorvm.import_hf(checkpoint("phi3-gqa3"), tmp_path / "p.tvm", optimize=False)
    shapes = {name: tuple(shape) for name, _, shape, _ in tensorvm.load(tmp_path / "p.tvm").weights_info()}
    assert not any("qkv_proj" in n or "gate_up_proj" in n for n in shapes)
    p = "model.layers.1."  # 6 heads and 2 kv heads of 6, hidden 36, intermediate 60
    assert [shapes[p + f"self_attn.{x}_proj.weight"] for x in "qkv"] == [(36, 36), (12, 36), (12, 36)]
    assert shapes[p + "mlp.gate_proj.weight"] == shapes[p + "mlp.up_proj.weight"] == (60, 36)


@pytest.fixture(scope="module")
def spm_tokenizers(tmp_path_factory):
    """Llama 2 style and Gemma style tokenizers, each trained once (the slow part)."""
    root = tmp_path_factory.mktemp("spm")
    return {gemma: tf.make_sentencepiece_bpe_tokenizer(root / f"tok{int(gemma)}", gemma=gemma)
            for gemma in (False, True)}


@pytest.mark.parametrize("family", ["Mistral", "Gemma", "Phi3"])
def test_complete_with_a_sentencepiece_style_tokenizer(tmp_path_factory, spm_tokenizers, family):
    """Their checkpoints carry a Llama 2 style tokenizer.json (Gemma's prepends no "▁"):
    text in, text out, as transformers' tokenizer and generate give it."""
    from tensorvm import _C
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    if not getattr(_C, "has_text", False):
        pytest.skip("tensorvm built without the text library")
    root = tmp_path_factory.mktemp(family)
    ckpt = tf.tiny_llama_checkpoint(spm_tokenizers[family == "Gemma"], root / "ckpt", family=family)
    prog = tensorvm.load(tensorvm.import_hf(ckpt, root / "g.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "sentencepiece"
    hf_tok = PreTrainedTokenizerFast.from_pretrained(ckpt, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(ckpt, attn_implementation="eager").eval()
    prompts = ["The cat sat", "Le chat 東京 🙂", " twelve  thirty"]
    batch = hf_tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=8, do_sample=False)
    want = hf_tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    assert prog.complete(prompts, max_new_tokens=8) == want

