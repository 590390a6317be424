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


def test_nllb_long_runs_of_unknown_characters(nllb):
    """A BPE model: the library's own segmentation, through the byte-fallback twin."""
    _, hf, tok = nllb
    for line in tf.long_unknown_lines():
        assert tok.encode(line) == hf(line)["input_ids"]


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
    with pytest.raises(ValueError, match="tokenizer.json: cannot open it: No such file"):
        _C.Tokenizer.load(str(prog))


# Checkpoints without tokenizer.json (the slow NllbTokenizer's files: sentencepiece.bpe.model
# and tokenizer_config.json, as fairseq-era checkpoints ship): the C++ library numbers the
# pieces itself. transformers 5 has no slow NllbTokenizer; it converts the spm model, which
# gives the same piece ids and, when tokenizer_config.json lists the added tokens' ids
# (added_tokens_decoder, in fairseq's order as the hub's NLLB configs), the same ids for
# everything: the reference here ("listed"). Without that list ("bare") transformers 4.38+
# and 5 number <mask> before the language codes, shifting every code by one from the
# model's embeddings (facebook/nllb-200's eng_Latn is 256047 = 256000 pieces + 1 + its
# index 46): the library keeps fairseq's order, so "bare" must give "listed"'s ids.

@pytest.fixture(scope="module", params=[("fra_Latn", False), ("deu_Latn", True)], ids=["prefix", "legacy"])
def nllb_spm_only(request, tmp_path_factory):
    from transformers import NllbTokenizer

    src, legacy = request.param
    root = tmp_path_factory.mktemp(f"nllb_spm_{src}")
    toks = {}
    for name in ("listed", "bare"):
        ckpt = tf.make_nllb_spm_only(root / name, src_lang=src, legacy=legacy, listed_ids=name == "listed")
        assert not (ckpt / "tokenizer.json").exists()
        prog = tf.tokenizer_only_program(ckpt, root / f"{name}.tvm", "m2m_100")
        entry = tensorvm.load(prog).meta["tokenizer"]
        assert entry["kind"] == "nllb-spm" and "tokenizer" not in entry["files"]
        toks[name] = tensorvm.load(prog).tokenizer
    listed = root / "listed"
    return listed, root / "bare", NllbTokenizer.from_pretrained(listed), toks["listed"], toks["bare"]


def test_nllb_without_tokenizer_json_matches_transformers(nllb_spm_only):
    """encode and decode equal transformers' NllbTokenizer loaded from the same directory
    (listed ids), and the library's own fairseq numbering ("bare") gives the same ids."""
    _, _, hf, listed, bare = nllb_spm_only
    lines = tf.tricky_lines(1500, seed=29, specials=SPECIALS)
    for line in lines:
        want = hf(line)["input_ids"]
        assert listed.encode(line) == want, line
        assert bare.encode(line) == want, line
    rnd = random.Random(30)
    rows = [hf(s)["input_ids"] for s in lines[:300]]
    rows += [[rnd.randrange(len(hf) + 10) for _ in range(rnd.randint(0, 16))] for _ in range(500)]
    for ids in rows:
        for skip in (True, False):
            want = hf.decode(ids, skip_special_tokens=skip)
            assert listed.decode(ids, skip) == want and bare.decode(ids, skip) == want, ids


@pytest.mark.parametrize("lang", ["eng_Latn", "ace_Arab", "zul_Latn"])
def test_nllb_without_tokenizer_json_languages(nllb_spm_only, lang):
    """Source languages at encode time and language ids; fairseq's numbering: codes from the
    spm size + 1 in transformers' FAIRSEQ_LANGUAGE_CODES order, <mask> after them."""
    import sentencepiece as spm
    from transformers import NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    listed_dir, bare_dir, _, listed, bare = nllb_spm_only
    hf = NllbTokenizer.from_pretrained(listed_dir, src_lang=lang)
    for line in tf.tricky_lines(200, seed=31, specials=SPECIALS):
        want = hf(line)["input_ids"]
        assert listed.encode(line, src_lang=lang) == want and bare.encode(line, src_lang=lang) == want, line
    n = spm.SentencePieceProcessor(model_file=str(bare_dir / "sentencepiece.bpe.model")).get_piece_size()
    codes = list(FAIRSEQ_LANGUAGE_CODES)
    assert bare.language_id(lang) == hf.convert_tokens_to_ids(lang) == n + 1 + codes.index(lang)
    assert bare.encode("<mask>")[1 if not hf.legacy_behaviour else 0] == n + 1 + len(codes)
    with pytest.raises(ValueError, match="'xx_Latn' is not a language code"):
        bare.language_id("xx_Latn")


def test_nllb_without_tokenizer_json_translate(nllb_spm_only, tmp_path):
    """import-hf of a checkpoint with only sentencepiece.bpe.model + tokenizer_config.json:
    translate with src_lang/tgt_lang equals generate + batch_decode."""
    import torch
    from transformers import M2M100ForConditionalGeneration, NllbTokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    listed_dir, bare_dir, _, _, _ = nllb_spm_only
    ckpt = tf.tiny_m2m100_checkpoint(bare_dir, tmp_path / "ckpt", seed=6)
    assert not (ckpt / "tokenizer.json").exists()
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "m.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "nllb-spm"
    model = M2M100ForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    texts = ["One two three.", "Le chat ... «très» heureux!"]
    hf = NllbTokenizer.from_pretrained(listed_dir, src_lang="eng_Latn")  # the numbering the model was made with
    batch = hf(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        want = hf.batch_decode(model.generate(**batch, forced_bos_token_id=hf.convert_tokens_to_ids("fra_Latn")),
                               skip_special_tokens=True)
    assert prog.translate(texts, src_lang="eng_Latn", tgt_lang="fra_Latn") == want
    out = tf.run_cli(prog.path, "translate", "--text", texts[0], "--src-lang", "eng_Latn", "--tgt-lang", "fra_Latn")
    assert out.stdout.decode().split("\n")[:-1] == want[:1]


def test_nllb_without_tokenizer_json_bad_spm(tmp_path):
    """An spm model not laid out as fairseq's NLLB models (<unk> <s> </s> first) has no known
    numbering without tokenizer.json: refused at load, naming the file."""
    import shutil

    import sentencepiece as spm

    ckpt = tf.make_nllb_spm_only(tmp_path / "ckpt")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tf.corpus("en", 300, 1)), model_prefix=str(tmp_path / "other"), vocab_size=200,
        model_type="bpe", num_threads=1, minloglevel=2, unk_id=2, bos_id=0, eos_id=1)
    shutil.copy(tmp_path / "other.model", ckpt / "sentencepiece.bpe.model")
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "tok.tvm", "m2m_100")
    with pytest.raises(ValueError, match="sentencepiece.bpe.model does not begin with <unk> <s> </s>"):
        tensorvm.load(prog).tokenizer
