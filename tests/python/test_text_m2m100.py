"""The C++ M2M100 tokenizer (text/m2m100.cpp) against transformers' M2M100Tokenizer, id
for id and text for text, on a BPE sentencepiece model trained here; import-hf carrying
it; translate on an imported M2M100."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402

pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")


@pytest.fixture(scope="module", params=["fr", "de"])
def m2m100(request, tmp_path_factory):
    """Two source languages; the second with clean_up_tokenization_spaces."""
    from transformers import M2M100Tokenizer

    root = tmp_path_factory.mktemp(f"m2m100_{request.param}")
    ckpt = tf.make_m2m100_tokenizer(root / "ckpt", src_lang=request.param, clean_up=request.param == "de")
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "m2m_100")
    return ckpt, M2M100Tokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


def test_m2m100_matches_transformers(m2m100):
    """M2M100Tokenizer: the source language token first (its id after vocab.json), </s>
    last; decoding keeps language tokens (they are not special) and <unk> for ids past
    the vocabulary, as transformers does."""
    _, hf, tok = m2m100
    assert tok.kind == "m2m100-spm"
    specials = ("</s>", "<unk>", "<pad>", "<s>", "__en__", "__fr__")
    for line in tf.tricky_lines(1500, seed=15, specials=specials):
        assert tok.encode(line) == hf(line)["input_ids"], line
    rnd = random.Random(16)
    size = len(hf.encoder) + len(hf.lang_token_to_id) + 10
    rows = [hf(s)["input_ids"] for s in tf.tricky_lines(300, seed=17, specials=specials)]
    rows += [[rnd.randrange(size) for _ in range(rnd.randint(0, 16))] for _ in range(500)]
    rows.append(hf("Le chat . Le chien ? Oui ! l 'été")["input_ids"])
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids


def test_m2m100_translate_matches_transformers(m2m100, tmp_path):
    """import-hf carries the M2M100 tokenizer (with its language codes); translate with the
    target language forced first equals generate + batch_decode, in Python and tensorvm-run."""
    import torch
    from transformers import M2M100ForConditionalGeneration

    from tensorvm.pycompiler.import_hf import import_hf

    tok_dir, hf_tok, _ = m2m100
    ckpt = tf.tiny_m2m100_checkpoint(tok_dir, tmp_path / "ckpt")
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "m.tvm"))
    assert prog.meta["tokenizer"]["kind"] == "m2m100-spm"
    model = M2M100ForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    texts = ["One two three.", "", "Le chat ... «très» heureux!"]
    en = hf_tok.get_lang_id("en")
    for kwargs in ({"forced_bos_token_id": en}, {"forced_bos_token_id": en, "num_beams": 3}):
        batch = hf_tok(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            want = hf_tok.batch_decode(model.generate(**batch, **kwargs), skip_special_tokens=True)
        assert prog.translate(texts, **kwargs) == want
    out = tf.run_cli(prog.path, "translate", "--text", "\n".join(texts), "--arg", f"forced_bos_token_id={en}").stdout.decode()
    assert out.split("\n")[:-1] == [prog.translate([s], forced_bos_token_id=en)[0] for s in texts]


def test_m2m100_languages_at_run_time(m2m100, tmp_path):
    """translate(src_lang=..., tgt_lang=...) equals transformers with the tokenizer's
    src_lang set and forced_bos_token_id = get_lang_id(tgt_lang), in Python and in
    tensorvm-run --src-lang/--tgt-lang; unknown languages are clear errors."""
    import torch
    from transformers import M2M100ForConditionalGeneration, M2M100Tokenizer

    from tensorvm.pycompiler.import_hf import import_hf

    tok_dir = m2m100[0]
    ckpt = tf.tiny_m2m100_checkpoint(tok_dir, tmp_path / "ckpt", seed=3)
    prog = tensorvm.load(import_hf(ckpt, tmp_path / "m.tvm"))
    model = M2M100ForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    texts = ["One two three.", "Le chat ... «très» heureux!"]
    for src, tgt in (("de", "fr"), ("en", "de"), ("zu", "en")):
        hf = M2M100Tokenizer.from_pretrained(ckpt, src_lang=src)
        batch = hf(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            want = hf.batch_decode(model.generate(**batch, forced_bos_token_id=hf.get_lang_id(tgt)),
                                   skip_special_tokens=True)
        assert prog.tokenizer.encode(texts[1], src_lang=src) == hf(texts[1])["input_ids"]
        assert prog.translate(texts, src_lang=src, tgt_lang=tgt) == want
        out = tf.run_cli(prog.path, "translate", "--text", "\n".join(texts), "--src-lang", src, "--tgt-lang", tgt)
        assert out.stdout.decode().split("\n")[:-1] == [prog.translate([t], src_lang=src, tgt_lang=tgt)[0] for t in texts]
        ids = tf.run_cli(prog.path, "tokenize", "--text", texts[0], "--src-lang", src).stdout.decode().split()
        assert list(map(int, ids)) == hf(texts[0])["input_ids"]
    # the Python command line takes the same options
    py = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "run", str(prog.path), "translate", "--text",
                         "\n".join(texts), "--src-lang", "de", "--tgt-lang", "fr"], capture_output=True, text=True)
    assert py.returncode == 0, py.stderr
    assert py.stdout.split("\n")[:-1] == [prog.translate([t], src_lang="de", tgt_lang="fr")[0] for t in texts]
    with pytest.raises(ValueError, match="'xx' is not a language code"):
        prog.translate(texts, tgt_lang="xx")
    with pytest.raises(ValueError, match="'eng_Latn' is not a language code"):
        prog.translate(texts, src_lang="eng_Latn")
    for flag in ("--src-lang", "--tgt-lang"):
        res = tf.run_cli(prog.path, "translate", "--text", "a", flag, "xx", ok=False)
        assert res.returncode != 0 and b"'xx' is not a language code" in res.stderr, res.stderr


def test_nllb_tokenizer_is_not_taken_for_m2m100(m2m100, tmp_path):
    """An NLLB checkpoint is model_type m2m_100 too; its tokenizer is another kind (nllb-spm:
    this copy has no tokenizer.json, so the library numbers its pieces, test_text_nllb.py)."""
    import shutil

    from tensorvm.pycompiler.tokenizer_attach import tokenizer_files

    ckpt = m2m100[0]
    assert tokenizer_files(ckpt, "m2m_100")[1]["kind"] == "m2m100-spm"
    nllb = tmp_path / "nllb"
    shutil.copytree(ckpt, nllb)
    config = json.loads((nllb / "tokenizer_config.json").read_text())
    config["tokenizer_class"] = "NllbTokenizer"
    (nllb / "tokenizer_config.json").write_text(json.dumps(config))
    entry = tokenizer_files(nllb, "m2m_100")[1]
    assert entry["kind"] == "nllb-spm" and "tokenizer" not in entry["files"] and "vocab" not in entry["files"]
