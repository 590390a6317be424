"""What Qwen3, Gemma 3 (text) and SmolLM3 add, checked where the shared parity tests
(test_decoder_only_parity.py, and test_decoder_only_families.py's beam 4 over their
seeded fixtures) do not: Gemma 3's sliding window really changes the fixture's
results, and text in and out with the tokenizer transformers 5 writes for each family
(Qwen2Tokenizer's and SmolLM3's byte-level BPE, GemmaTokenizer's sentencepiece-style
BPE), on tiny checkpoints of each family over those vocabularies (Qwen3's untied,
Gemma 3's with a window shorter than its prompts)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

import hf5_tokenizers as h5
import tensorvm
import text_fixtures as tf
from decoder_only_helpers import checkpoint, hf_model, hf_position_ids, left_padded, random_prompts


def test_gemma3_window_changes_the_fixture(tmp_path):
    """The same weights with a window wider than the text give other tokens and logits:
    matching transformers (token-exact, logits within 1e-4) exercises the window."""
    import transformers

    model = hf_model("gemma3-window4")
    assert model.config.sliding_window == 4 and "full_attention" in model.config.layer_types
    config = transformers.Gemma3TextConfig.from_dict({**model.config.to_dict(), "sliding_window": 64})
    wide = transformers.Gemma3ForCausalLM(config).eval()
    wide.load_state_dict(model.state_dict())
    ids, mask = left_padded(random_prompts(np.random.default_rng(7), model.config.vocab_size, [9, 4]), pad=0)
    kw = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=12, do_sample=False)
    logits_kw = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                     position_ids=torch.tensor(hf_position_ids(mask)))
    with torch.no_grad():
        windowed, full = model.generate(**kw).numpy(), wide.generate(**kw).numpy()
        want, full_logits = model(**logits_kw).logits.numpy(), wide(**logits_kw).logits.numpy()
    assert not np.array_equal(windowed, full)
    prog = tensorvm.load(tensorvm.import_hf(checkpoint("gemma3-window4"), tmp_path / "m.tvm"))
    np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=12), windowed)
    got = prog.run("forward", ids, mask)
    np.testing.assert_allclose(got[mask == 1], want[mask == 1], atol=1e-4, rtol=0)
    # the first row's last query sees 9 keys, 4 through the window: the logits must differ
    assert np.abs(got[0, -1] - full_logits[0, -1]).max() > 1e-2


# family -> (config class, model class, config entries beyond the shared tiny sizes)
FAMILIES = {
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(head_dim=12, tie_word_embeddings=False)),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", dict(num_hidden_layers=3, no_rope_layer_interval=2)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM",
               dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=3,
                    layer_types=["sliding_attention", "full_attention"])),
}


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """Each family's tokenizer files as transformers 5 saves them, trained here once."""
    import transformers

    root = tmp_path_factory.mktemp("small-tok")
    vocab, _ = h5._byte_bpe_files(root / "bpe")
    transformers.Qwen2Tokenizer.from_pretrained(vocab.parent).save_pretrained(root / "qwen3")
    h5.make_gemma(root / "gemma3")
    # SmolLM3 ships Llama 3's byte-level BPE (a PreTrainedTokenizerFast with <|begin_of_text|> prepended)
    tf.make_byte_bpe_tokenizer(root / "smollm3", "llama3")
    return root


def _checkpoint(tokenizer_dir, out, family: str, seed: int = 0):
    """A seeded random model of `family` over the tokenizer's vocabulary, saved with it."""
    import transformers

    config_class, model_class, extra = FAMILIES[family]
    tok = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    eos = tok.eos_token_id
    config = getattr(transformers, config_class)(**{
        "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
        "bos_token_id": tok.bos_token_id, "eos_token_id": eos,
        "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else eos, **extra})
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(config).eval()
    with torch.no_grad():  # larger weights than the default init: logits far apart, no near-ties
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    model.save_pretrained(out)
    for f in tokenizer_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    return out


@pytest.mark.parametrize("family, kind", [("qwen3", "byte-level-bpe"), ("smollm3", "byte-level-bpe"),
                                          ("gemma3", "sentencepiece")])
def test_complete_with_the_family_tokenizer(tmp_path, tokenizers, family, kind):
    """Text in, text out (left-padded batch of different lengths), as transformers'
    tokenizer and generate give it."""
    from tensorvm import _C
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not getattr(_C, "has_text", False):
        pytest.skip("tensorvm built without the text library")
    ckpt = _checkpoint(tokenizers / family, tmp_path / "ckpt", family)
    assert json.loads((ckpt / "tokenizer_config.json").read_text())["tokenizer_class"] != "PreTrainedTokenizerFast" \
        or family == "smollm3"
    prog = tensorvm.load(tensorvm.import_hf(ckpt, tmp_path / "m.tvm"))
    assert prog.meta["tokenizer"]["kind"] == kind
    hf_tok = AutoTokenizer.from_pretrained(ckpt, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(ckpt, attn_implementation="eager").eval()
    prompts = ["The cat sat on the mat", "Le chat 東京 🙂", " twelve  thirty"]
    batch = hf_tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=8, do_sample=False)
    want = hf_tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    assert [list(prog.tokenizer.encode(p)) for p in prompts] == [hf_tok(p)["input_ids"] for p in prompts]
    assert prog.complete(prompts, max_new_tokens=8) == want
