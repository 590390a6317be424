"""Tokenizer files transformers 5 saved (tests/python/hf5_tokenizers.py), then edited as
people and other tools edit them: a field written empty, a tokenizer_config.json flag
transformers applies over tokenizer.json at load, a malformed entry. The text library
either follows transformers on every corpus line or refuses the files, saying why."""
from __future__ import annotations

import json
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

MAKERS = {"gpt2": (h5.make_gpt2, "gpt2"), "llama": (h5.make_llama2, "llama"),
          "bart": (lambda out: h5.make_byte_bpe(out, "bart"), "bart")}


@pytest.fixture(scope="module")
def lines():
    return h5.corpus_lines()[::6]  # 600 lines of every file: each edit changes whole classes of lines


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The files of each family as transformers 5 saved them, made once; tests edit copies."""
    root = tmp_path_factory.mktemp("saved")
    return {name: maker(root / name) for name, (maker, _) in MAKERS.items()}


def _copy(saved: dict, name: str, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(saved[name], tmp_path / name))


def _edit(path: Path, **changes) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _check_exact(ckpt: Path, model_type: str, lines: list, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(ckpt)
    tok = tensorvm.load(tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", model_type)).tokenizer
    rows = hf(lines)["input_ids"]
    bad = [(line, tok.encode(line), ids) for line, ids in zip(lines, rows) if tok.encode(line) != ids]
    assert not bad, f"{len(bad)} lines differ, first: {bad[:2]}"
    for skip in (True, False):
        want = hf.batch_decode(rows, skip_special_tokens=skip)
        bad = [(ids, tok.decode(ids, skip), text) for ids, text in zip(rows, want) if tok.decode(ids, skip) != text]
        assert not bad, f"skip_special_tokens={skip}: {len(bad)} differ, first: {bad[:2]}"


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_no_decoder_joins_tokens_with_spaces(saved, name, lines, tmp_path):
    """"decoder": null: tokenizers joins the tokens with spaces, as they are ("Ġthe Ġcat").
    Before, the byte-level library decoded the bytes anyway and the sentencepiece-style
    one ran an empty chain (no spaces). The files name the generic class, which runs
    tokenizer.json as it is (GPT2Tokenizer, LlamaTokenizer... build their own decoder)."""
    ckpt = _copy(saved, name, tmp_path)
    _edit(ckpt / "tokenizer.json", decoder=None)
    _edit(ckpt / "tokenizer_config.json", tokenizer_class="PreTrainedTokenizerFast")
    _check_exact(ckpt, MAKERS[name][1], lines, tmp_path)


def test_no_decoder_under_a_model_class_is_refused(saved, tmp_path):
    """GPT2Tokenizer builds its own ByteLevel decoder at load and ignores tokenizer.json's
    null one, where the library would join the tokens with spaces: refused at import."""
    from types import SimpleNamespace

    from tensorvm.pycompiler.importers import UnsupportedConfig
    from tensorvm.pycompiler.tokenizer_attach import attach_tokenizer

    ckpt = _copy(saved, "gpt2", tmp_path)
    _edit(ckpt / "tokenizer.json", decoder=None)
    with pytest.raises(UnsupportedConfig, match="tokenizer.json has no decoder, but transformers' GPT2Tokenizer"):
        attach_tokenizer(SimpleNamespace(meta={}, extra_files=None), ckpt, "gpt2")


def test_a_byte_level_decoder_of_another_kind_is_refused(saved, tmp_path):
    """A byte-level tokenizer.json whose decoder is not ByteLevel was read as if it were."""
    ckpt = _copy(saved, "gpt2", tmp_path)
    _edit(ckpt / "tokenizer.json", decoder={"type": "Fuse"})
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", "gpt2")
    with pytest.raises(ValueError, match=r"tokenizer\.json: decoder \{\"type\":\"Fuse\"\} is not supported"):
        _C.Tokenizer.load(str(prog))


@pytest.mark.parametrize("name, flags", [
    ("llama", {"add_bos_token": False, "add_eos_token": True}),
    ("gpt2", {"add_bos_token": True, "add_eos_token": True}),
])
def test_config_add_bos_and_eos_token_are_ignored_as_transformers_does(saved, name, flags, lines, tmp_path):
    """tokenizer_config.json's add_bos_token / add_eos_token (the hub's Llama 2 configs
    have them): transformers 5.23 drops them when the checkpoint has a tokenizer.json
    (PreTrainedTokenizerBase.from_pretrained) and runs tokenizer.json's post-processor;
    the library does the same."""
    ckpt = _copy(saved, name, tmp_path)
    _edit(ckpt / "tokenizer_config.json", **flags)
    _check_exact(ckpt, MAKERS[name][1], lines, tmp_path)


def test_bart_post_processor_is_the_class_own(saved, lines, tmp_path):
    """RobertaTokenizer (BART) sets RobertaProcessing (<s> text </s>) at load whatever
    tokenizer.json's post_processor is; before, the library ran the file's (here none)."""
    ckpt = _copy(saved, "bart", tmp_path)
    _edit(ckpt / "tokenizer.json", post_processor=None)
    _check_exact(ckpt, "bart", lines, tmp_path)


@pytest.mark.parametrize("config, reason", [
    ({"language": "klingon"}, "tokenizer_config.json's language 'klingon' is not one transformers knows"),
    ({"task": "summarize"}, "tokenizer_config.json's task 'summarize' is not one of"),
])
def test_whisper_prefix_transformers_refuses(tmp_path, config, reason):
    """WhisperTokenizer builds its prefix from the config's language and task at load and
    refuses ones it does not know; so does the import, with the reason."""
    from types import SimpleNamespace

    from tensorvm.pycompiler.importers import UnsupportedConfig
    from tensorvm.pycompiler.tokenizer_attach import attach_tokenizer

    ckpt = h5.make_byte_bpe(tmp_path / "ckpt", "whisper")
    _edit(ckpt / "tokenizer_config.json", **config)
    with pytest.raises(UnsupportedConfig, match=reason):
        attach_tokenizer(SimpleNamespace(meta={}, extra_files=None), ckpt, "whisper")


@pytest.mark.parametrize("maker, model_type, bad_key", [
    (h5.make_m2m100, "m2m_100", "x7"),
    (tf.make_marian_tokenizer, "marian", "12ab"),  # a small Marian: the same config code
])
def test_added_tokens_decoder_key_that_is_no_id(maker, model_type, bad_key, tmp_path):
    """A key of tokenizer_config.json's added_tokens_decoder that is not a number: a clear
    error naming the file and the key (before: a bare std::invalid_argument "stoll", or
    "12ab" read as 12)."""
    ckpt = maker(tmp_path / "ckpt")
    config = json.loads((ckpt / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["added_tokens_decoder"] = {bad_key: {"content": "<extra>", "special": True}}
    (ckpt / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", model_type)
    with pytest.raises(ValueError, match=rf"tokenizer/tokenizer_config\.json: added_tokens_decoder: key '{bad_key}' "
                                         r"is not a token id \(a decimal integer\)"):
        _C.Tokenizer.load(str(prog))


def test_a_split_that_matches_is_refused(tmp_path):
    """Gemma's Split on " " never matches after its normalizer replaced every " " (read as
    no pre-tokenizer, tests/python/test_text_hf5.py); a Split that can match is refused."""
    ckpt = h5.make_gemma(tmp_path / "ckpt")
    tj = json.loads((ckpt / "tokenizer.json").read_text(encoding="utf-8"))
    tj["pre_tokenizer"]["pattern"] = {"String": "a"}
    (ckpt / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    prog = tf.tokenizer_only_program(ckpt, tmp_path / "p.tvm", "gemma")
    with pytest.raises(ValueError, match="pre_tokenizer Split .* is not supported"):
        _C.Tokenizer.load(str(prog))
