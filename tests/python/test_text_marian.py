"""The C++ Marian tokenizer (text/marian.cpp) against transformers' MarianTokenizer
(with sacremoses installed when it is), id for id and text for text, on sentencepiece
models trained here; import-hf carrying the tokenizer; program.translate."""
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

SPECIALS = ("</s>", "<unk>", "<pad>")


def _marian(root, separate_vocabs: bool):
    from transformers import MarianTokenizer

    ckpt = tf.make_marian_tokenizer(root / "ckpt", separate_vocabs=separate_vocabs)
    prog = tf.tokenizer_only_program(ckpt, root / "tok.tvm", "marian")
    return ckpt, MarianTokenizer.from_pretrained(ckpt), tensorvm.load(prog).tokenizer


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    return _marian(tmp_path_factory.mktemp("marian_tok"), False)


@pytest.fixture(scope="module")
def marian_separate(tmp_path_factory):
    return _marian(tmp_path_factory.mktemp("marian_sep"), True)


def test_separate_vocabularies(marian_separate):
    """vocab.json for the source, target_vocab.json and the target spm for decoding."""
    ckpt, hf, tok = marian_separate
    assert hf.separate_vocabs
    for line in tf.tricky_lines(400, seed=12, specials=SPECIALS):
        assert tok.encode(line) == hf(line)["input_ids"], line
    rnd = random.Random(13)
    rows = [[rnd.randrange(len(hf.decoder)) for _ in range(rnd.randint(0, 20))] for _ in range(400)]
    rows += [hf(text_target=s)["input_ids"] for s in tf.corpus("fr", 100, 14)]
    for ids in rows:
        for skip in (True, False):
            assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids


def test_encode_matches_marian_tokenizer(marian):
    """Every line encodes to transformers' ids, including the lines where the unigram
    model scores two segmentations the same ("...": ". .." or ".. ."), which
    text/spm_unigram.cpp breaks as the sentencepiece wheel does."""
    _, hf, tok = marian
    lines = tf.tricky_lines(1500, seed=1, specials=SPECIALS)
    lines += ["a...", "x ...", "....", "!!!!!", "-----", "?!?!", "«««»»»"]
    for line in lines:
        assert tok.encode(line) == hf(line)["input_ids"], line


def test_long_runs_of_unknown_characters(marian):
    """Encoded as MarianTokenizer encodes them, through the byte-fallback twin of the model."""
    _, hf, tok = marian
    for line in tf.long_unknown_lines():
        assert tok.encode(line) == hf(line)["input_ids"]


def test_moses_normalisation_is_not_applied(marian):
    """transformers' MarianTokenizer sets up sacremoses' punctuation normaliser but never
    calls it when encoding (its `normalize` is unused), so neither do we."""
    pytest.importorskip("sacremoses")
    _, hf, tok = marian
    line = "«Bonjour» , dit-il ... 1 000"
    assert hf.normalize(line) != line  # sacremoses would change it...
    assert tok.encode(line) == hf(line)["input_ids"]  # ...but encoding does not use it


def test_batch_encode_is_encode(marian):
    _, _, tok = marian
    lines = tf.tricky_lines(50, seed=2)
    assert tok.encode_batch(lines) == [tok.encode(s) for s in lines]


@pytest.mark.parametrize("skip", [True, False])
def test_decode_matches_marian_tokenizer(marian, skip):
    _, hf, tok = marian
    rnd = random.Random(3)
    rows = [hf(s)["input_ids"] for s in tf.tricky_lines(600, seed=4, specials=SPECIALS)]
    rows += [[rnd.randrange(len(hf.encoder)) for _ in range(rnd.randint(0, 20))] for _ in range(400)]
    for ids in rows:
        assert tok.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), ids
    assert tok.decode_batch(rows[:20], skip) == hf.batch_decode(rows[:20], skip_special_tokens=skip)


def test_language_codes_and_specials(marian):
    _, hf, tok = marian
    for line in [">>fr<< Le chat", ">>de<<", ">>zz<< x", "a </s> b", "<pad><unk>", ""]:
        assert tok.encode(line) == hf(line)["input_ids"], line
    assert tok.encode("") == [hf.eos_token_id]
    assert tok.encode(">>fr<<")[0] == hf.encoder[">>fr<<"]


def test_bad_input_is_a_clear_error(marian):
    _, hf, tok = marian
    for bad in (b"\xff", b"abc\xc3", b"\xed\xa0\x80", b"\xc0\xaf"):  # stray, cut short, surrogate, overlong
        with pytest.raises(ValueError, match="not valid UTF-8"):
            tok.encode(bad)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([10 ** 9])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([-5])


def test_program_without_tokenizer(tmp_path):
    from tensorvm.pycompiler.program_dir import ProgramError, write_program_dir

    p = write_program_dir(tmp_path / "p.tvm", "# tensorvm ir 1\ndef identity(x: int) -> int:\n    return x\n", {}, {})
    with pytest.raises(ProgramError, match="has no tokenizer"):
        tensorvm.load(p).tokenizer
    with pytest.raises(ValueError, match="has no tokenizer"):
        _C.Tokenizer.load(str(p))


def test_tokenizer_files_must_stay_inside(tmp_path, marian):
    from tensorvm.pycompiler.program_dir import ProgramError, write_program_dir

    ckpt = marian[0]
    for name in ("../x", "/abs", "tokenizer/../../x", "meta.json", ""):
        with pytest.raises(ProgramError, match="extra file name"):
            write_program_dir(tmp_path / "q.tvm", "def f(x: int) -> int:\n    return x\n", {}, {},
                              extra_files={name: ckpt / "vocab.json"})
    assert not (tmp_path / "q.tvm").exists()
    p = tf.tokenizer_only_program(ckpt, tmp_path / "r.tvm", "marian")
    meta = json.loads((p / "meta.json").read_text())
    meta["tokenizer"]["files"]["vocab"] = "../../etc/passwd"
    (p / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="inside the program directory"):
        _C.Tokenizer.load(str(p))


def test_checkpoint_without_tokenizer_files(tmp_path):
    from tensorvm.pycompiler.tokenizer_attach import tokenizer_files

    assert tokenizer_files(tmp_path, "marian") == ({}, None)
    (tmp_path / "source.spm").write_bytes(b"x")
    assert tokenizer_files(tmp_path, "marian") == ({}, None)  # target.spm and vocab.json missing


@pytest.fixture(scope="module")
def translator(tmp_path_factory, marian):
    from tensorvm.pycompiler.import_hf import import_hf

    root = tmp_path_factory.mktemp("marian_model")
    ckpt = tf.tiny_marian_checkpoint(marian[0], root / "ckpt")
    prog = import_hf(ckpt, root / "m.tvm")
    return ckpt, tensorvm.load(prog)


def test_import_hf_carries_the_tokenizer(translator, marian):
    ckpt, prog = translator
    assert prog.meta["tokenizer"]["kind"] == "marian-spm"
    for name in ("source.spm", "target.spm", "vocab.json"):
        assert (prog.path / "tokenizer" / name).read_bytes() == (ckpt / name).read_bytes()
    line = "Twenty cats sat on the mat."
    assert prog.tokenizer.encode(line) == marian[1](line)["input_ids"]


@pytest.mark.parametrize("kwargs", [{}, {"num_beams": 3}, {"max_new_tokens": 5}])
def test_translate_matches_transformers(translator, kwargs):
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    ckpt, prog = translator
    hf_tok = MarianTokenizer.from_pretrained(ckpt)
    model = MarianMTModel.from_pretrained(ckpt, attn_implementation="eager").eval()
    texts = ["One two three.", "", "Le chat ... «très» heureux!", "  spaces   and\ttabs  "]
    batch = hf_tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        want = hf_tok.batch_decode(model.generate(**batch, **kwargs), skip_special_tokens=True)
    assert prog.translate(texts, **kwargs) == want
    assert prog.translate([]) == []
    with pytest.raises(TypeError, match="list of texts"):
        prog.translate("one text")


_cli = tf.run_cli


def test_cli_tokenize(translator, tmp_path):
    _, prog = translator
    lines = ["Hello world", "", ">>fr<< Le chat «très» heureux…", "  tabs\tand   spaces ", "東京 🙂"]
    out = _cli(prog.path, "tokenize", "--text", "\n".join(lines)).stdout.decode().split("\n")
    assert out[:-1] == [" ".join(map(str, prog.tokenizer.encode(s))) for s in lines] and out[-1] == ""
    f = tmp_path / "in.txt"
    f.write_bytes(("\r\n".join(lines) + "\r\n").encode())  # CRLF, a final newline: the same lines
    assert _cli(prog.path, "tokenize", "--text-file", f).stdout.decode().split("\n")[:-1] == out[:-1]


def test_cli_translate(translator):
    _, prog = translator
    lines = ["One two three.", "", "Le chat ... «très» heureux!"]
    out = _cli(prog.path, "translate", "--text", "\n".join(lines), "--arg", "num_beams=2").stdout.decode()
    assert out.split("\n")[:-1] == [prog.translate([s], num_beams=2)[0] for s in lines]


def test_cli_text_errors(translator, tmp_path):
    _, prog = translator
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nnot \xff fine\n")
    for args, message in [
        (("tokenize", "--text-file", bad), "input line 2: marian tokenizer: encode: the text is not valid UTF-8"),
        (("translate", "--text-file", bad), "input line 2"),
        (("tokenize",), "needs --text"),
        (("tokenize", "--text", "x", "--text", "y"), "one --text or --text-file"),
        (("tokenize", "--text-file", tmp_path / "missing.txt"), "cannot open"),
        (("complete", "--text", "x"), "not a decoder-only program"),
        (("translate", "--text", "x", "--arg", "bogus=1"), "generate has no such option"),
        (("translate", "--text", "x", "--ids", "1 2"), "takes --text or --text-file"),
        (("generate", "--text", "x"), "go with the verbs"),
    ]:
        res = _cli(prog.path, *args, ok=False)
        assert res.returncode == 1 and message in res.stderr.decode(), (args, res.stderr)


def test_cli_program_without_tokenizer(tmp_path):
    from tensorvm.pycompiler.program_dir import write_program_dir

    p = write_program_dir(tmp_path / "p.tvm", "# tensorvm ir 1\ndef identity(x: int) -> int:\n    return x\n", {}, {})
    res = _cli(p, "tokenize", "--text", "hi", ok=False)
    assert res.returncode == 1 and "has no tokenizer" in res.stderr.decode()


def test_embedded_app_translates_text(translator, tmp_path):
    """examples/translate_text.cpp, built against an installed prefix (component dev) with
    tensorvm::text, prints what program.translate gives, line for line."""
    import os
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    build = Path(os.environ.get("TENSORVM_BUILD_DIR", root / "build" / "release"))
    if not (build / "CMakeCache.txt").is_file() or not shutil.which("cmake"):
        pytest.skip(f"no CMake build at {build} (set TENSORVM_BUILD_DIR)")
    if not (build / "libtensorvm_text.a").is_file():
        pytest.skip(f"{build} has not built the text library")
    prefix, ex = tmp_path / "prefix", tmp_path / "ex"
    run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)  # noqa: E731
    run("cmake", "--install", str(build), "--prefix", str(prefix), "--component", "dev")
    assert (prefix / "include" / "tensorvm" / "text" / "tokenizer.h").is_file()
    run("cmake", "-S", str(root / "examples"), "-B", str(ex), f"-DCMAKE_PREFIX_PATH={prefix}")
    run("cmake", "--build", str(ex), "--target", "translate_text")
    _, prog = translator
    lines = ["One two three.", "", "Le chat ... «très» heureux!"]
    out = run(str(ex / "translate_text"), str(prog.path), *lines).stdout
    assert out.split("\n")[:-1] == [prog.translate([s])[0] for s in lines]
    res = subprocess.run([str(ex / "translate_text"), str(prog.path), "bad \udcff".encode("utf-8", "surrogateescape")],
                         capture_output=True, timeout=120)
    assert res.returncode == 1 and b"not valid UTF-8" in res.stderr


def test_text_demo_runs(tmp_path, capsys):
    """examples/text_demo.py end to end with a one-second training run (what the model
    learns is not checked): tensorvm-run translate prints program.translate's text."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("text_demo", root / "examples" / "text_demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    assert demo.french(21) == "vingt et un" and demo.french(71) == "soixante et onze"
    assert demo.french(80) == "quatre-vingts" and demo.french(99) == "quatre-vingt-dix-neuf"
    assert demo.english(73) == "seventy-three"
    sentences, outputs, prog = demo.main(["--out", str(tmp_path), "--seconds", "1"])
    assert outputs == [tensorvm.load(prog).translate([s])[0] for s in sentences]
    assert "->" in capsys.readouterr().out


def test_import_cli_says_which_tokenizer(translator, tmp_path):
    import subprocess

    ckpt, _ = translator
    res = subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", "import-hf", str(ckpt), "-o",
                          str(tmp_path / "p.tvm")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "(tokenizer: marian-spm)" in res.stdout


def test_python_cli_text_verbs(translator, tmp_path):
    """`tensorvm run|replay PROGRAM translate|tokenize` print what tensorvm-run prints."""
    import subprocess

    _, prog = translator
    text = "One two three.\n\nLe chat ... «très» heureux!"

    def tensorvm(*args):
        return subprocess.run([sys.executable, "-m", "tensorvm.pycompiler.cli", *map(str, args)], capture_output=True,
                              text=True, timeout=600)

    for verb, extra in (("tokenize", []), ("translate", ["--arg", "num_beams=2"])):
        want = _cli(prog.path, verb, "--text", text, *extra).stdout.decode()
        for mode in ("run", "replay"):
            res = tensorvm(mode, prog.path, verb, "--text", text, *extra)
            assert res.returncode == 0, res.stderr
            assert res.stdout == want, (mode, verb)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\n")
    res = tensorvm("run", prog.path, "tokenize", "--text-file", bad)
    assert res.returncode == 1 and "not valid UTF-8" in res.stderr
    res = tensorvm("run", prog.path, "complete", "--text", "x")
    assert res.returncode == 1 and "not a decoder-only program" in res.stderr
