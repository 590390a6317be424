"""The C++ NLLB tokenizer (text/nllb.cpp) against transformers' NllbTokenizer (the same
class as NllbTokenizerFast in transformers 5), id for id and text for text, on a BPE
sentencepiece model trained here, in both prefix orders, with the source language set
at import and at encode time."""
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

SPECIALS = ("</s>", "<unk>", "<pad>", "<s>", "<mask>", "eng_Latn", "fra_Latn", "zho_Hans")


@pytest.fixture(scope="module", params=[("fra_Latn", False, False), ("deu_Latn", True, False), ("eng_Latn", False, True)],
                ids=["prefix", "legacy", "clean_up"])
def nllb(request, tmp_path_factory):
    from transformers import NllbTokenizer

    src, legacy, clean_up = request.param
    root = tmp_path_factory.mktemp(f"nllb_{src}")
    ckpt = tf.make_nllb_tokenizer(root / "ckpt", src_lang=src, legacy=legacy, clean_up=clean_up)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "m2m_100")
    return ckpt, NllbTokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


def test_nllb_encode_matches_transformers(nllb):
    """[src_lang] tokens </s> (legacy_behaviour: tokens </s> [src_lang]); language codes and
    <mask> (lstrip) in the text are single tokens; whitespace at the end of a stretch of
    text is a lone "▁", as the converted tokenizer transformers runs keeps it."""
    _, hf, tok = nllb
    assert tok.kind == "nllb-spm"
    lines = tf.tricky_lines(1500, seed=25, specials=SPECIALS)
    for line in lines:
        assert tok.encode(line) == hf(line)["input_ids"], line
    assert tok.encode_batch(lines[:50]) == [hf(s)["input_ids"] for s in lines[:50]]
    with pytest.raises(ValueError, match="nllb tokenizer: encode: .*not valid UTF-8"):
        tok.encode(b"ok \xff")


@pytest.mark.parametrize("lang", ["eng_Latn", "zho_Hans", "ace_Arab", "zul_Latn"])
def test_nllb_src_lang_at_encode_time(nllb, lang):
    """encode(text, src_lang=...) equals transformers' tokenizer with that src_lang."""
    ckpt, _, tok = nllb
    from transformers import NllbTokenizer

    hf = NllbTokenizer.from_pretrained(ckpt, src_lang=lang)
    for line in tf.tricky_lines(300, seed=26, specials=SPECIALS):
        assert tok.encode(line, src_lang=lang) == hf(line)["input_ids"], line
    assert tok.language_id(lang) == hf.convert_tokens_to_ids(lang)
    with pytest.raises(ValueError, match="'xx_Latn' is not a language code"):
        tok.encode("a", src_lang="xx_Latn")
    with pytest.raises(ValueError, match="'fr' is not a language code"):
        tok.language_id("fr")


def test_nllb_decode_matches_transformers(nllb):
    """decode equals transformers' decode, skipping special tokens or not, on encoded lines
    and on random ids (language codes, <mask>, ids past the vocabulary)."""
    _, hf, tok = nllb
    rnd = random.Random(27)
    size = len(hf) + 10
    rows = [hf(s)["input_ids"] for s in tf.tricky_lines(400, seed=28, specials=SPECIALS)]
    rows += [[rnd.randrange(size) for _ in range(rnd.randint(0, 16))] for _ in range(600)]
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids
    assert tok.decode_batch(rows[:50], True) == hf.batch_decode(rows[:50], skip_special_tokens=True)


def test_nllb_translate_matches_transformers(nllb, tmp_path):
    """import-hf carries the NLLB tokenizer; translate with src_lang/tgt_lang equals
    generate + batch_decode with transformers' tokenizer, in Python and tensorvm-run."""
    import torch
    from transformers import M2M100ForConditionalGeneration, NllbTokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    ckpt = tf.tiny_m2m100_checkpoint(nllb[0], tmp_path / "ckpt", seed=4)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "m.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "nllb-spm"
    model = M2M100ForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    texts = ["One two three.", "Le chat ... «très» heureux!", "x <mask> y"]
    for src, tgt in ((None, "fra_Latn"), ("eng_Latn", "deu_Latn"), ("zho_Hans", "eng_Latn")):
        hf = NllbTokenizer.from_pretrained(ckpt, **({"src_lang": src} if src else {}))
        batch = hf(texts, return_tensors="pt", padding=True)
        forced = hf.convert_tokens_to_ids(tgt)
        for kwargs in ({}, {"num_beams": 3}):
            with torch.no_grad():
                want = hf.batch_decode(model.generate(**batch, forced_bos_token_id=forced, **kwargs),
                                       skip_special_tokens=True)
            assert prog.translate(texts, src_lang=src, tgt_lang=tgt, **kwargs) == want
        args = ["--src-lang", src] if src else []
        out = tf.run_cli(prog.path, "translate", "--text", "\n".join(texts), *args, "--tgt-lang", tgt)
        # one run per line, so compared with translating each line alone
        assert out.stdout.decode().split("\n")[:-1] == [prog.translate([t], src_lang=src, tgt_lang=tgt)[0] for t in texts]
    res = tf.run_cli(prog.path, "translate", "--text", "a", "--tgt-lang", "fr", ok=False)
    assert res.returncode != 0 and b"'fr' is not a language code" in res.stderr


def test_nllb_bad_program_files(nllb, tmp_path):
    """A program whose meta.json lacks the language codes, or whose tokenizer.json is
    missing, is refused at load with a message naming what is wrong."""
    import json
    import shutil

    from tensorvm import _C

    ckpt = nllb[0]
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "tok.tvm", "m2m_100")
    no_codes = tmp_path / "no_codes.tvm"
    shutil.copytree(prog, no_codes)
    meta = json.loads((no_codes / "meta.json").read_text())
    del meta["tokenizer"]["language_codes"]
    (no_codes / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match='an nllb-spm tokenizer needs "language_codes"'):
        _C.Tokenizer.load(str(no_codes))
    (prog / meta["tokenizer"]["files"]["tokenizer"]).unlink()
    with pytest.raises(ValueError, match="cannot read .*tokenizer.json"):
        _C.Tokenizer.load(str(prog))
