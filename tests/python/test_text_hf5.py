"""The text library on tokenizer files transformers 5 writes itself (save_pretrained of
its own classes, tests/python/hf5_tokenizers.py), over every line of a real multilingual
corpus (tests/fixtures/data/corpus): ids and decoded text equal transformers' on every
line, or the import refuses the files with the reason."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf5_tokenizers as h5  # noqa: E402
import text_fixtures as tf  # noqa: E402

pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")

# name -> (maker, model_type, options)
CASES = {
    "gpt2": (h5.make_gpt2, "gpt2", {"class_name": "GPT2Tokenizer"}),
    "gpt2-fast": (h5.make_gpt2, "gpt2", {"class_name": "GPT2TokenizerFast"}),
    "gpt2-prefix-space-bos": (h5.make_gpt2, "gpt2", {"add_prefix_space": True, "add_bos_token": True}),
    # Llama 2: a sentencepiece BPE converted by transformers 5 (Metaspace, no normalizer, no unk_token)
    "llama2": (h5.make_llama2, "llama", {"add_bos_token": True}),
    "llama2-fast-no-byte-fallback": (h5.make_llama2, "llama", {"class_name": "LlamaTokenizerFast",
                                                               "byte_fallback": False}),
    "llama2-legacy": (h5.make_llama2, "llama", {"legacy": True}),
    "llama2-no-prefix-space": (h5.make_llama2, "llama", {"add_prefix_space": False}),
    # Gemma (3): Replace(" ", "▁") normalizer, then a Split on " " (which finds none)
    "gemma": (h5.make_gemma, "gemma3_text", {}),
    # NLLB: tokenizer.json converted from sentencepiece.bpe.model, which the library segments with
    "nllb-byte-fallback": (h5.make_nllb, "m2m_100", {"byte_fallback": True}),
    "nllb-fast": (h5.make_nllb, "m2m_100", {"byte_fallback": False, "class_name": "NllbTokenizerFast"}),
    "nllb-spm-only": (h5.make_nllb, "m2m_100", {"byte_fallback": True, "tokenizer_json": False}),
    # T5: tokenizer.json converted from spiece.model (Precompiled normalizer, WhitespaceSplit + Metaspace)
    "t5": (h5.make_t5, "t5", {}),
    "t5-fast-byte-fallback": (h5.make_t5, "t5", {"class_name": "T5TokenizerFast", "byte_fallback": True}),
    "t5-spm-default-ids": (h5.make_t5, "t5", {"t5_ids": False}),  # tokenizer.json's unk_id 2 is "</s>" here
}


@pytest.fixture(scope="module")
def lines():
    return h5.corpus_lines()


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    from transformers import AutoTokenizer

    maker, model_type, options = CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    ckpt = maker(root / "ckpt", **options)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", model_type)
    return request.param, ckpt, AutoTokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


def _differences(pairs) -> str:
    bad = [(what, got, want) for what, got, want in pairs if got != want]
    return f"{len(bad)} differ, first: {bad[:3]}" if bad else ""


def test_encode_every_line(case, lines):
    name, _, hf, tok = case
    assert len(lines) > 3500
    diff = _differences((line, tok.encode(line), hf(line)["input_ids"]) for line in lines)
    assert not diff, f"{name}: {diff}"


@pytest.mark.parametrize("skip", [True, False])
def test_decode_every_line(case, lines, skip):
    name, _, hf, tok = case
    rows = [hf(line)["input_ids"] for line in lines]
    diff = _differences((ids, tok.decode(ids, skip), hf.decode(ids, skip_special_tokens=skip)) for ids in rows)
    assert not diff, f"{name}: {diff}"


def test_gpt2_empty_prefix_and_suffix_are_absent(tmp_path):
    """transformers 5's GPT2Tokenizer writes continuing_subword_prefix and
    end_of_word_suffix as "": the same as absent (the case above reads them); a real
    prefix is still refused, at load."""
    import json

    ckpt = h5.make_gpt2(tmp_path / "ckpt")
    fields = h5.saved_model_fields(ckpt)
    assert fields["continuing_subword_prefix"] == "" and fields["end_of_word_suffix"] == ""
    tj = json.loads((ckpt / "tokenizer.json").read_text(encoding="utf-8"))
    tj["model"]["continuing_subword_prefix"] = "##"
    (ckpt / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", "gpt2")
    with pytest.raises(ValueError, match="model.continuing_subword_prefix is not supported"):
        _C.Tokenizer.load(str(prog))


def test_gemma_split_on_space_needs_the_replacing_normalizer(tmp_path):
    """GemmaTokenizer's Split(" ") cuts nothing only because the normalizer has replaced
    every " " (the case above reads that); after a normalizer that leaves spaces it would
    cut, which the library does not do: refused at load."""
    import json

    ckpt = h5.make_gemma(tmp_path / "ckpt")
    tj = json.loads((ckpt / "tokenizer.json").read_text(encoding="utf-8"))
    assert tj["pre_tokenizer"]["type"] == "Split" and tj["normalizer"]["type"] == "Replace"
    tj["normalizer"] = {"type": "Prepend", "prepend": "\u2581"}
    (ckpt / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", "gemma3_text")
    with pytest.raises(ValueError, match="Split on \" \" is supported only after a normalizer that replaces"):
        _C.Tokenizer.load(str(prog))


def test_import_refuses_a_tokenizer_it_cannot_read(tmp_path, capsys):
    """A checkpoint whose tokenizer the text library cannot read exactly is refused at
    import with the library's reason (not a program silently without a tokenizer);
    --no-tokenizer imports the model alone, and says so."""
    import json

    from tensorvm.pycompiler import cli

    tok_dir = tf.make_byte_bpe_tokenizer(tmp_path / "tok", "gpt2")
    ckpt = tf.tiny_gpt2_checkpoint(tok_dir, tmp_path / "ckpt")
    tj = json.loads((ckpt / "tokenizer.json").read_text(encoding="utf-8"))
    tj["normalizer"] = {"type": "Lowercase"}
    (ckpt / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    assert cli.main(["import-hf", str(ckpt), "-o", str(tmp_path / "a.tvm")]) == 1
    err = capsys.readouterr().err
    assert "its tokenizer cannot be carried" in err and "normalizer Lowercase is not supported" in err, err
    assert "--no-tokenizer" in err and not (tmp_path / "a.tvm").exists()
    assert cli.main(["import-hf", str(ckpt), "-o", str(tmp_path / "b.tvm"), "--no-tokenizer"]) == 0
    assert "no tokenizer: --no-tokenizer" in capsys.readouterr().out
    assert "tokenizer" not in json.loads((tmp_path / "b.tvm" / "meta.json").read_text())


@pytest.mark.parametrize("files, reason", [
    ({"tokenizer.json": {"model": {"type": "WordPiece"}, "normalizer": None, "pre_tokenizer": None}},
     "tokenizer.json is of a kind the text library does not read (model WordPiece"),
    ({"tokenizer.model": None}, "read from tokenizer.json, which the checkpoint lacks (it has tokenizer.model)"),
])
def test_attach_refuses_files_of_another_kind(tmp_path, files, reason):
    """Tokenizer files of a kind the library does not read (before: dropped, "the
    checkpoint has no tokenizer files") refuse the import, naming what they are."""
    import json
    from types import SimpleNamespace

    from tensorvm.pycompiler.importers import UnsupportedConfig
    from tensorvm.pycompiler.tokenizer_attach import attach_tokenizer, why_no_tokenizer

    for name, content in files.items():
        (tmp_path / name).write_text(json.dumps(content) if content else "x", encoding="utf-8")
    builder = SimpleNamespace(meta={}, extra_files=None)
    with pytest.raises(UnsupportedConfig, match="its tokenizer cannot be carried: .*" + reason.replace("(", r"\(")
                       .replace(")", r"\)")):
        attach_tokenizer(builder, tmp_path, "llama")
    attach_tokenizer(builder, tmp_path, "llama", tokenizer=False)
    assert builder.meta == {}
    assert why_no_tokenizer(tmp_path / "none", "llama") == "the checkpoint has no tokenizer files"
    assert why_no_tokenizer(tmp_path, "mbart").startswith("mbart's tokenizer is not read yet")
