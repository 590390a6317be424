"""The C++ T5 tokenizer (text/t5.cpp) against transformers' T5Tokenizer (the same class as
T5TokenizerFast in transformers 5), id for id and text for text, on a unigram
sentencepiece model trained here: spm pieces, </s> appended, <extra_id_N> sentinels."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402

pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")

SPECIALS = ("</s>", "<unk>", "<pad>", "<extra_id_0>", "<extra_id_7>", "<extra_id_99>")


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "clean_up"])
def t5(request, tmp_path_factory):
    from transformers import T5Tokenizer

    root = tmp_path_factory.mktemp("t5")
    ckpt = tf.make_t5_tokenizer(root / "ckpt", clean_up=request.param)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "t5")
    return ckpt, T5Tokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


def test_t5_encode_matches_transformers(t5):
    """Pieces by tokenizers' rules (one search per word, in double precision: "..." is
    ". .." where the sentencepiece wheel says ".. ."), </s> last, sentinels whole."""
    _, hf, tok = t5
    assert tok.kind == "t5-spm"
    lines = tf.tricky_lines(1500, seed=45, specials=SPECIALS)
    lines += ["..." * k for k in range(1, 8)] + [f"a{'.' * k} b" for k in range(1, 12)]
    for line in lines:
        assert tok.encode(line) == hf(line)["input_ids"], line
    with pytest.raises(ValueError, match="t5 tokenizer: encode: .*not valid UTF-8"):
        tok.encode(b"ok \xc3")
    with pytest.raises(ValueError, match="has no source language"):
        tok.encode("a", src_lang="fr")


def test_t5_long_runs_of_unknown_characters(t5):
    """The normalised text from the byte-fallback twin, then one search per word."""
    _, hf, tok = t5
    for line in tf.long_unknown_lines():
        assert tok.encode(line) == hf(line)["input_ids"]


def test_t5_decode_matches_transformers(t5):
    """Decoding, with clean_up_tokenization_spaces too (transformers 5 applies it to a
    Unigram model, not to a BPE one)."""
    _, hf, tok = t5
    rnd = random.Random(46)
    rows = [hf(s)["input_ids"] for s in tf.tricky_lines(400, seed=47, specials=SPECIALS)]
    rows += [[rnd.randrange(len(hf) + 5) for _ in range(rnd.randint(0, 16))] for _ in range(600)]
    rows.append(hf("Hello , world . I 'm sure it 's done ?")["input_ids"])
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids
    assert tok.decode_batch(rows, True) == hf.batch_decode(rows, skip_special_tokens=True)
