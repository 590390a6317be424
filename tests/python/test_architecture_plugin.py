"""An architecture from outside the package: the model file and the importer of
docs/extending.md ("An architecture of your own"), written into a temporary folder as
they stand in the doc, loaded by `tensorvm import-hf --plugin`, import a seeded random
OLMo checkpoint with its tokenizer.json, and generate token-exact with transformers;
then what register_architecture and the plugin loader refuse, by name."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tensorvm
from decoder_only_helpers import random_prompts
from tensorvm.pycompiler import importers
from tensorvm.pycompiler.cli import main
from tensorvm.testing import compare_generate

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
SECTION = "## An architecture of your own, from outside the package"


def doc_files() -> dict:
    """{file name: text} of the section's python blocks that start with `# <name>.py`."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION + "\n")
    body = text[start:text.index("\n## ", start + 1)]
    blocks = re.findall(r"^```python\n(# (\w+\.py)\n.*?)^```$", body, re.S | re.M)
    return {name: code for code, name in blocks}


@pytest.fixture(scope="module")
def registry():
    """The architecture table, sys.path and the plugin modules as they were, after the module."""
    saved, path = dict(importers.ARCHITECTURES), list(sys.path)
    yield importers.ARCHITECTURES
    importers.ARCHITECTURES.clear()
    importers.ARCHITECTURES.update(saved)
    sys.path[:] = path
    for name in ("olmo_model", "olmo_plugin", "toy_plugin_28"):
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def olmo(tmp_path_factory, registry):
    """(checkpoint, plugin file, program imported with it, transformers model)."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import hf5_tokenizers as h5

    root = tmp_path_factory.mktemp("olmo")
    files = doc_files()
    assert sorted(files) == ["olmo_model.py", "olmo_plugin.py"]
    plugin_dir = root / "plugin"
    plugin_dir.mkdir()
    for name, code in files.items():
        (plugin_dir / name).write_text(code, encoding="utf-8")
    bpe = Tokenizer(models.BPE())  # OLMo ships a GPT-NeoX tokenizer
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(h5.corpus_lines()[::4], trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|padding|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.model.save(str(root))
    ckpt = root / "ckpt"
    tok = transformers.GPTNeoXTokenizer.from_pretrained(root, eos_token="<|endoftext|>", pad_token="<|padding|>")
    tok.save_pretrained(ckpt)
    config = transformers.OlmoConfig(
        vocab_size=len(tok), hidden_size=40, num_attention_heads=4, num_key_value_heads=2, intermediate_size=68,
        num_hidden_layers=2, max_position_embeddings=96, clip_qkv=1.5, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, bos_token_id=None)
    torch.manual_seed(5)
    model = transformers.OlmoForCausalLM(config).eval()
    with torch.no_grad():  # logits far apart: no near-ties
        for p in model.parameters():
            p.normal_(0.0, 2.0 / p.shape[-1] ** 0.5 if p.dim() == 2 else 1.0)
    model.save_pretrained(ckpt)
    out = root / "olmo.tvm"
    assert main(["import-hf", str(ckpt), "-o", str(out), "--plugin", str(plugin_dir / "olmo_plugin.py")]) == 0
    return ckpt, plugin_dir / "olmo_plugin.py", tensorvm.load(out), model


def test_generates_token_exact(olmo):
    ckpt, _, prog, model = olmo
    assert prog.meta["model_type"] == "olmo"
    prompts = random_prompts(np.random.default_rng(4), model.config.vocab_size, [7, 3, 5])
    for options in ({"max_new_tokens": 12}, {"max_new_tokens": 10, "num_beams": 4, "num_return_sequences": 4}):
        result = compare_generate(ckpt, prog, prompts, reference=model, **options)
        assert result.ok, str(result)


def test_the_tokenizer_comes_along(olmo):
    """The record's default tokenizer kind reads the checkpoint's tokenizer.json (no second
    table to edit): text in, text out as transformers' tokenizer and generate give it."""
    from tensorvm import _C
    from transformers import AutoTokenizer

    ckpt, _, prog, model = olmo
    assert prog.meta["tokenizer"]["kind"] == "byte-level-bpe"
    if not getattr(_C, "has_text", False):
        pytest.skip("tensorvm built without the text library")
    tok = AutoTokenizer.from_pretrained(ckpt, padding_side="left")
    prompts = ["The cat sat", "Le chat 東京 🙂"]
    batch = tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=6, do_sample=False)
    want = tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    assert prog.complete(prompts, max_new_tokens=6) == want


def test_register_refuses_what_it_would_overwrite_or_cannot_use(olmo):
    gpt2 = importers.ARCHITECTURES["gpt2"]
    with pytest.raises(ValueError, match="model_type 'gpt2' is a built-in architecture .*replace=True"):
        tensorvm.register_architecture("gpt2", gpt2)
    with pytest.raises(ValueError, match="model_type 'olmo' is registered already"):
        tensorvm.register_architecture("olmo", gpt2)
    tensorvm.register_architecture("gpt2", importers.ARCHITECTURES["olmo"], replace=True)
    assert importers.architecture("gpt2").model_class == "OlmoForCausalLM"
    tensorvm.register_architecture("gpt2", gpt2, replace=True)
    with pytest.raises(TypeError, match="expected an Architecture, not dict"):
        tensorvm.register_architecture("mine", {"model_class": "X"})
    fields = (gpt2.spec_from_config, gpt2.weights, gpt2.build)
    with pytest.raises(TypeError, match=r"Architecture\(GPT2LMHeadModel\): weights must be callable"):
        tensorvm.Architecture("GPT2LMHeadModel", fields[0], "weights", gpt2.build)
    with pytest.raises(TypeError, match=r"Architecture\(GPT2LMHeadModel\): meta must be callable"):
        tensorvm.Architecture("GPT2LMHeadModel", *fields, meta={})
    with pytest.raises(ValueError, match="tokenizer 'spm' is not a kind"):
        tensorvm.Architecture("GPT2LMHeadModel", *fields, tokenizer="spm")
    with pytest.raises(TypeError, match="positional"):  # linear_weights and meta are keywords only
        tensorvm.Architecture("GPT2LMHeadModel", gpt2.spec_from_config, gpt2.weights, gpt2.linear_weights, gpt2.meta,
                              gpt2.build)
    with pytest.raises(importers.UnsupportedConfig, match="model_type 'nope' is not supported .*register_architecture"):
        importers.architecture("nope")


def test_a_plugin_that_fails_is_named(tmp_path, capsys, registry):
    bad = tmp_path / "broken_plugin_28.py"
    bad.write_text("raise RuntimeError('no weights here')\n", encoding="utf-8")
    for plugin, why in ((str(bad), "RuntimeError: no weights here"), ("no_such_plugin_28", "ModuleNotFoundError")):
        assert main(["import-hf", str(tmp_path), "-o", str(tmp_path / "p.tvm"), "--plugin", plugin]) == 1
        assert f"plugin '{plugin}' failed to import: {why}" in capsys.readouterr().err


def test_plugins_from_the_environment(tmp_path, monkeypatch, registry):
    from tensorvm.pycompiler.plugins import ENV, load_plugins

    (tmp_path / "toy_plugin_28.py").write_text(
        "import tensorvm\nfrom tensorvm.pycompiler.importers import ARCHITECTURES\n"
        "tensorvm.register_architecture('toy28', ARCHITECTURES['gpt2'])\n", encoding="utf-8")
    monkeypatch.setenv(ENV, str(tmp_path / "toy_plugin_28.py"))
    load_plugins()
    load_plugins()  # imported once: no second registration to refuse
    assert importers.architecture("toy28") is importers.ARCHITECTURES["gpt2"]
