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
