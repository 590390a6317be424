"""The C++ byte-level BPE (text/byte_bpe.cpp) against transformers' fast tokenizer and
the tokenizers library, id for id and text for text, on BPE tokenizers trained here in
the styles of GPT-2, Llama 3 and Qwen2 (their pre-tokenizer regexes) and BART (GPT-2's,
with RobertaProcessing's <s> text </s>)."""
from __future__ import annotations

import json
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

STYLES = {"gpt2": "gpt2", "llama3": "llama", "qwen2": "qwen2", "bart": "bart"}
ADDED = tf.BPE_SPECIALS + tf.BART_SPECIALS + ("<added>", "ünï")


@pytest.fixture(scope="module", params=sorted(STYLES))
def bpe(request, tmp_path_factory):
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp(f"bpe_{request.param}")
    ckpt = tf.make_byte_bpe_tokenizer(root / "ckpt", request.param)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", STYLES[request.param])
    return (request.param, PreTrainedTokenizerFast.from_pretrained(ckpt),
            Tokenizer.from_file(str(ckpt / "tokenizer.json")), tensorvm.load(prog).tokenizer)


def test_encode_matches_tokenizers(bpe):
    style, hf, raw, tok = bpe
    assert tok.kind == "byte-level-bpe"
    lines = tf.tricky_lines(1500, seed=5, specials=ADDED)
    lines += ["1234567890 12 345", "\n\n\n", "a\r\nb", " \t\n x", "don't I'M we'RE", "<|endoftext|>hi<|endoftext|>"]
    for line in lines:
        want = raw.encode(line).ids
        assert hf(line)["input_ids"] == want
        assert tok.encode(line) == want, (style, line)
    if style == "llama3":
        assert tok.encode("")[0] == raw.token_to_id("<|begin_of_text|>")
    if style == "bart":
        assert tok.encode("") == [0, 2]


@pytest.mark.parametrize("skip", [True, False])
def test_decode_matches_tokenizers(bpe, skip):
    style, hf, raw, tok = bpe
    rnd = random.Random(6)
    rows = [raw.encode(s).ids for s in tf.tricky_lines(500, seed=7, specials=ADDED)]
    # random ids: byte tokens that cut a UTF-8 character in two decode to U+FFFD
    rows += [[rnd.randrange(raw.get_vocab_size()) for _ in range(rnd.randint(0, 12))] for _ in range(500)]
    for ids in rows:
        assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), (style, ids)


def test_bad_input(bpe):
    _, _, raw, tok = bpe
    with pytest.raises(ValueError, match="not valid UTF-8"):
        tok.encode(b"ok \xf0\x9f\x99")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([raw.get_vocab_size() + 10])


def test_unsupported_tokenizer_json_is_refused(tmp_path, bpe):
    style, _, raw, _ = bpe
    if style != "gpt2":
        pytest.skip("one style is enough")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    j = json.loads(raw.to_str())
    j["normalizer"] = {"type": "Lowercase"}
    (ckpt / "tokenizer.json").write_text(json.dumps(j))
    p = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", "gpt2")
    with pytest.raises(ValueError, match="normalizer Lowercase is not supported"):
        _C.Tokenizer.load(str(p))


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def decoder(request, tmp_path_factory):
    """(checkpoint, program, kind): a GPT-2 with a byte-level BPE, a Llama with a
    Llama 2 style (sentencepiece) BPE."""
    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp(f"{request.param}_text")
    if request.param == "gpt2":
        tok_dir = tf.make_byte_bpe_tokenizer(root / "tok", "gpt2")
        ckpt, kind = tf.tiny_gpt2_checkpoint(tok_dir, root / "ckpt"), "byte-level-bpe"
    else:
        from tensorvm.pycompiler import registry

        if "rotary" not in registry.real_ops():
            pytest.skip("the Llama importer's ops (rotary) are not in this build yet")
        tok_dir = tf.make_sentencepiece_bpe_tokenizer(root / "tok")
        ckpt, kind = tf.tiny_llama_checkpoint(tok_dir, root / "ckpt"), "sentencepiece"
    return ckpt, tensorvm.load(import_hf(ckpt, root / "g.tvm")), kind


@pytest.mark.parametrize("kwargs", [{}, {"num_beams": 2, "max_new_tokens": 6}])
def test_complete_matches_transformers(decoder, kwargs):
    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    ckpt, prog, kind = decoder
    assert prog.meta["tokenizer"]["kind"] == kind
    hf_tok = PreTrainedTokenizerFast.from_pretrained(ckpt, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(ckpt, attn_implementation="eager").eval()
    prompts = ["The cat sat", "Le chat 東京 🙂", "twelve  thirty\t"]
    batch = hf_tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, **kwargs)
    want = hf_tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    assert prog.complete(prompts, **kwargs) == want
    with pytest.raises(ValueError, match="decoder-only"):
        prog.translate(prompts)
    if not prog.tokenizer.encode(""):  # GPT-2: "" is no prompt (Llama's is <s>)
        with pytest.raises(ValueError, match="no tokens"):
            prog.complete([""])


def test_cli_complete(decoder):
    import subprocess

    from pyc_helpers import tensorvm_run_tool

    _, prog, _ = decoder
    prompts = ["The cat sat", "twelve  thirty"]
    res = subprocess.run([tensorvm_run_tool(), str(prog.path), "complete", "--text", "\n".join(prompts), "--arg",
                          "max_new_tokens=5"], capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode().split("\n")[:-1] == [prog.complete([p], max_new_tokens=5)[0] for p in prompts]
    py = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "run", str(prog.path), "complete", "--text",
                         "\n".join(prompts), "--arg", "max_new_tokens=5"], capture_output=True, timeout=300)
    assert py.returncode == 0 and py.stdout == res.stdout, py.stderr.decode()
    res = subprocess.run([tensorvm_run_tool(), str(prog.path), "translate", "--text", "x"], capture_output=True,
                         timeout=300)
    assert res.returncode == 1 and b"decoder-only program; use the verb complete" in res.stderr
    if not prog.tokenizer.encode(""):
        res = subprocess.run([tensorvm_run_tool(), str(prog.path), "complete", "--text", ""], capture_output=True,
                             timeout=300)
        assert res.returncode == 1 and b"input line 1 gives no tokens" in res.stderr


@pytest.fixture(scope="module")
def spm_bpe(tmp_path_factory):
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp("spm_bpe")
    ckpt = tf.make_sentencepiece_bpe_tokenizer(root / "ckpt")
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "llama")
    return (PreTrainedTokenizerFast.from_pretrained(ckpt), Tokenizer.from_file(str(ckpt / "tokenizer.json")),
            tensorvm.load(prog).tokenizer)


def test_sentencepiece_bpe_matches_tokenizers(spm_bpe):
    """Llama 2 style: "▁" for spaces, <0xXX> tokens for characters outside the vocabulary
    (CJK, emoji here), <s> first; decoding through Replace, ByteFallback, Fuse, Strip."""
    hf, raw, tok = spm_bpe
    assert tok.kind == "sentencepiece"
    specials = ("<s>", "</s>", "<unk>", "<added>", "ünï")
    long_line = " ".join(tf.tricky_lines(400, seed=18))  # one BPE word of ~20,000 characters
    for line in tf.tricky_lines(1500, seed=8, specials=specials) + [long_line]:
        want = raw.encode(line).ids
        assert hf(line)["input_ids"] == want
        assert tok.encode(line) == want, line
    rnd = random.Random(9)
    rows = [raw.encode(s).ids for s in tf.tricky_lines(300, seed=10, specials=specials)]
    rows += [[rnd.randrange(raw.get_vocab_size()) for _ in range(rnd.randint(0, 12))] for _ in range(500)]
    rows += [[1, 3 + 0xE6, 3 + 0x9D], [3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82, 5]]  # cut and whole characters
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids


@pytest.mark.parametrize("forced", [False, True])
def test_clean_up_tokenization_spaces(tmp_path, forced):
    """transformers 5 ignores clean_up_tokenization_spaces for a BPE tokenizer (Llama 3's
    configs set it) unless clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output
    is set too; decode follows both."""
    from transformers import PreTrainedTokenizerFast

    ckpt = tf.make_byte_bpe_tokenizer(tmp_path / "base", "gpt2")
    config = json.loads((ckpt / "tokenizer_config.json").read_text())
    config["clean_up_tokenization_spaces"] = True
    if forced:
        config["clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"] = True
    (ckpt / "tokenizer_config.json").write_text(json.dumps(config))
    hf = PreTrainedTokenizerFast.from_pretrained(ckpt)
    tok = tensorvm.load(tf.tokenizer_only_program(ckpt, tmp_path / "tok.tvm", "gpt2")).tokenizer
    lines = ["Hello , world . Is it ? Yes ! I 'm sure it 's done", "don 't , they 're"]
    lines += tf.tricky_lines(300, seed=8)
    for line in lines:
        ids = hf(line)["input_ids"]
        assert tok.decode(ids, True) == hf.decode(ids, skip_special_tokens=True), line
    assert (hf.decode(hf(lines[0])["input_ids"]) != lines[0]) == forced
