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

# name -> (maker, model_type, options); options["blank_fields"]: the saved files' optional
# fields then written present but empty (hf5_tokenizers.blank_optional_fields).
CASES = {
    "gpt2": (h5.make_gpt2, "gpt2", {"class_name": "GPT2Tokenizer"}),
    "gpt2-fast": (h5.make_gpt2, "gpt2", {"class_name": "GPT2TokenizerFast"}),
    "gpt2-prefix-space-bos": (h5.make_gpt2, "gpt2", {"add_prefix_space": True, "add_bos_token": True}),
    "gpt2-blank-fields": (h5.make_gpt2, "gpt2", {"blank_fields": True}),
    # Llama 2: a sentencepiece BPE converted by transformers 5 (Metaspace, no normalizer, no unk_token)
    "llama2": (h5.make_llama2, "llama", {"add_bos_token": True}),
    "llama2-fast-no-byte-fallback": (h5.make_llama2, "llama", {"class_name": "LlamaTokenizerFast",
                                                               "byte_fallback": False}),
    "llama2-legacy": (h5.make_llama2, "llama", {"legacy": True}),
    "llama2-no-prefix-space": (h5.make_llama2, "llama", {"add_prefix_space": False}),
    "llama2-blank-fields": (h5.make_llama2, "llama", {"class_name": "LlamaTokenizerFast", "blank_fields": True}),
    # Gemma: Replace(" ", "▁") normalizer, a Split on " " (which then never matches), byte fallback
    "gemma": (h5.make_gemma, "gemma", {}),
    "gemma-fast": (h5.make_gemma, "gemma", {"class_name": "GemmaTokenizerFast"}),
    "gemma3": (h5.make_gemma, "gemma3_text", {}),
    # byte-level BPE families
    "qwen2": (h5.make_byte_bpe, "qwen2", {"family": "qwen2"}),
    "qwen2-fast-blank-fields": (h5.make_byte_bpe, "qwen2", {"family": "qwen2", "class_name": "Qwen2TokenizerFast",
                                                            "blank_fields": True}),
    "llama3": (h5.make_byte_bpe, "llama", {"family": "llama3"}),
    "bart": (h5.make_byte_bpe, "bart", {"family": "bart"}),
    "bart-fast": (h5.make_byte_bpe, "bart", {"family": "bart", "class_name": "BartTokenizerFast"}),
    # Whisper: the prefix WhisperTokenizer builds at load from the config's language/task/predict_timestamps
    "whisper": (h5.make_byte_bpe, "whisper", {"family": "whisper"}),
    "whisper-fast-french-transcribe": (h5.make_byte_bpe, "whisper", {
        "family": "whisper", "class_name": "WhisperTokenizerFast", "language": "french", "task": "transcribe",
        "predict_timestamps": True}),
    # Marian and M2M100: one (sentencepiece-run) class each in transformers 5
    "marian": (h5.make_marian, "marian", {}),
    "marian-separate-vocabs-byte-fallback": (h5.make_marian, "marian", {"separate_vocabs": True,
                                                                        "byte_fallback": True}),
    "m2m100": (h5.make_m2m100, "m2m_100", {}),
    "m2m100-byte-fallback": (h5.make_m2m100, "m2m_100", {"byte_fallback": True}),
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
def case(request, tmp_path_factory, lines):
    """(name, program directory, transformers' tokenizer, the program's tokenizer,
    transformers' ids of every line, the id rows to decode: the same, or with separate
    Marian vocabularies the target side's)."""
    from transformers import AutoTokenizer

    maker, model_type, options = CASES[request.param]
    options = dict(options)
    blank = options.pop("blank_fields", False)
    root = tmp_path_factory.mktemp(request.param)
    ckpt = maker(root / "ckpt", **options)
    if blank:
        h5.blank_optional_fields(ckpt)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", model_type)
    hf = AutoTokenizer.from_pretrained(ckpt)
    want = hf(lines)["input_ids"]
    rows = hf(text_target=lines)["input_ids"] if options.get("separate_vocabs") else want
    return request.param, prog, hf, tensorvm.load(prog).tokenizer, want, rows


def _differences(pairs) -> str:
    bad = [(what, got, want) for what, got, want in pairs if got != want]
    return f"{len(bad)} differ, first: {bad[:3]}" if bad else ""


def test_encode_every_line(case, lines):
    name, _, _, tok, want, _ = case
    assert len(lines) > 3500
    diff = _differences((line, tok.encode(line), ids) for line, ids in zip(lines, want))
    assert not diff, f"{name}: {diff}"


def test_tokenize_verb_every_line(case, lines, tmp_path):
    """`tensorvm-run PROG tokenize --text-file`, every line in one call: the same ids. The
    verb drops a line's final "\r" (a CRLF file's), so those lines are compared with
    transformers' ids of the line without it."""
    name, prog, hf, _, want, _ = case
    (tmp_path / "lines.txt").write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    out = tf.run_cli(prog, "tokenize", "--text-file", tmp_path / "lines.txt").stdout.decode().split("\n")
    assert out[-1] == "" and len(out) == len(lines) + 1, f"{name}: {len(out) - 1} lines out for {len(lines)}"
    cr = [i for i, line in enumerate(lines) if line.endswith("\r")]
    want = list(want)
    for i, ids in zip(cr, hf([lines[i][:-1] for i in cr])["input_ids"] if cr else []):
        want[i] = ids
    got = [[int(x) for x in row.split()] for row in out[:-1]]
    diff = _differences((line, g, w) for line, g, w in zip(lines, got, want))
    assert not diff, f"{name}: {diff}"


@pytest.mark.parametrize("skip", [True, False])
def test_decode_every_line(case, skip):
    name, _, hf, tok, _, rows = case
    want = hf.batch_decode(rows, skip_special_tokens=skip)
    diff = _differences((ids, tok.decode(ids, skip), text) for ids, text in zip(rows, want))
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
    with pytest.raises(ValueError, match="pre_tokenizer Split .* is not supported"):
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
