"""Text in, text out from a compiled program: the command line `tensorvm compile` builds
(cli/main.h) runs the same text verbs as tensorvm-run (cli/text_verbs.h, shared
code in tensorvm::cli), so on the same program and input it prints exactly what
tensorvm-run prints: translate (greedy, beam, several sequences, sampling with a seed,
--text-file), tokenize, complete for a decoder-only program, generate --stream, --src-lang/--tgt-lang for
M2M100, Whisper's transcript as text (its prompt from --language/--task, or the language detected), and the same
errors (docs/aot.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C
from tensorvm.pycompiler.locations import NotInstalledError, get_tensorvm_run
from test_aot import _compile_and_build

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402

pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")

LINES = ["One two three.", "", "Le chat ... «très» heureux!", "  spaces   and\ttabs  "]


def _checkpoint(kind: str, root: Path) -> Path:
    if kind == "marian":
        return tf.tiny_marian_checkpoint(tf.make_marian_tokenizer(root / "tok"), root / "ckpt")
    if kind == "gpt2":
        return tf.tiny_gpt2_checkpoint(tf.make_byte_bpe_tokenizer(root / "tok", "gpt2"), root / "ckpt")
    if kind == "m2m100":
        return tf.tiny_m2m100_checkpoint(tf.make_m2m100_tokenizer(root / "tok"), root / "ckpt", seed=3)
    return tf.tiny_whisper_checkpoint(tf.make_whisper_tokenizer(root / "tok"), root / "ckpt", seed=5, prompt_config=True)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """programs(kind) -> (kind, run, program), each built once: run(*args) gives
    [(status, stdout, stderr)] of the compiled command line and of tensorvm-run on the
    program, imported with its tokenizer."""
    from tensorvm.pycompiler.import_hf import import_hf

    try:
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    built = {}

    def get(kind):
        if kind in built:
            return built[kind]
        tmp = tmp_path_factory.mktemp(f"aot-text-{kind}")
        prog = import_hf(_checkpoint(kind, tmp), tmp / f"{kind}.tvm")
        b = _compile_and_build(tmp, Path(prog))
        assert "warning" not in b["log"].lower(), b["log"]
        exe = b["build"] / "compiled" / "compiled-run"

        def run(*args):
            out = []
            for tool in (exe, interp):
                res = subprocess.run([str(tool), str(prog), *map(str, args)], capture_output=True, timeout=600)
                out.append((res.returncode, res.stdout, res.stderr.decode()))
            return out

        built[kind] = (kind, run, Path(prog))
        return built[kind]

    return get


@pytest.fixture
def both(programs, request):
    return programs(request.param)


def _same(run, *args) -> str:
    """Runs both command lines; asserts both succeed and print the same bytes."""
    (code, out, err), (icode, iout, ierr) = run(*args)
    assert code == 0 and icode == 0, (args, err, ierr)
    assert out == iout, args
    return out.decode()


def _same_error(run, *args) -> str:
    """Runs both; asserts both fail with the same message (after each tool's name)."""
    (code, _, err), (icode, _, ierr) = run(*args)
    assert code == 1 and icode == 1, (args, err, ierr)
    msg = err.split(": error: ", 1)[1].rstrip("\n")
    assert msg == ierr.split(": error: ", 1)[1].rstrip("\n"), (args, err, ierr)
    return msg


@pytest.mark.parametrize("both", ["marian", "m2m100"], indirect=True)
def test_translate_and_tokenize_print_what_tensorvm_run_prints(both, tmp_path):
    kind, run, prog = both
    text = "\n".join(LINES)
    for options in ([], ["--arg", "num_beams=1"], ["--arg", "num_beams=3"],
                    ["--arg", "num_beams=3", "--arg", "num_return_sequences=2"],
                    ["--arg", "do_sample=True", "--arg", "seed=7", "--arg", "top_k=0"], ["--threads", "2"]):
        out = _same(run, "translate", "--text", text, *options)
        rows = 2 if "num_return_sequences=2" in options else 1
        assert len(out.split("\n")) == len(LINES) * rows + 1 and out.endswith("\n")
    f = tmp_path / "in.txt"
    f.write_bytes(("\r\n".join(LINES) + "\r\n").encode())
    assert _same(run, "translate", "--text-file", f) == _same(run, "translate", "--text", text)
    ids = _same(run, "tokenize", "--text", text)
    assert [line.split() for line in ids.split("\n")[:-1]] == [
        [str(i) for i in tensorvm.load(prog).tokenizer.encode(s)] for s in LINES]
    # the function runner's --stream too: each step's ids as they come
    streamed = _same(run, "generate", "--ids", "5 6 7 8", "--arg", "num_beams=1", "--arg", "max_new_tokens=4", "--stream")
    assert streamed.startswith("stream: ")
    if kind == "m2m100":
        _same(run, "translate", "--text", text, "--src-lang", "de", "--tgt-lang", "fr")
        _same(run, "tokenize", "--text", text, "--src-lang", "de")
        for flag in ("--src-lang", "--tgt-lang"):
            assert "'xx' is not a language code" in _same_error(run, "translate", "--text", "a", flag, "xx")


@pytest.mark.parametrize("both", ["gpt2"], indirect=True)
def test_complete_prints_what_tensorvm_run_prints(both):
    _, run, _ = both
    prompts = "The cat sat\ntwelve  thirty\nLe chat 東京 🙂"
    for options in (["--arg", "max_new_tokens=5"], ["--arg", "max_new_tokens=6", "--arg", "num_beams=2"]):
        assert len(_same(run, "complete", "--text", prompts, *options).split("\n")) == 4
    assert "decoder-only program; use the verb complete" in _same_error(run, "translate", "--text", "x")


@pytest.mark.parametrize("both", ["whisper"], indirect=True)
def test_transcribe_prints_the_same_text(both, tmp_path):
    import wave

    _, run, prog = both
    # without --language both detect it with the program's detect_language_audio
    assert "def detect_language_audio(" in (prog / "program.py").read_text()
    pcm16 = (np.random.default_rng(9).standard_normal(12000) * 3000).astype("<i2")
    wav = tmp_path / "speech.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm16.tobytes())
    for beams in ("1", "2"):
        out = _same(run, "transcribe", "--wav", wav, "--arg", "max_new_tokens=8", "--arg", f"num_beams={beams}")
        assert not out.startswith("output 0 = ")  # text, not the ids
    # the decoder prompt from --language / --task, built with the program's tokenizer
    _same(run, "transcribe", "--wav", wav, "--language", "fr", "--task", "translate", "--arg", "max_new_tokens=7")
    assert "unknown language 'klingon'" in _same_error(run, "transcribe", "--wav", wav, "--language", "klingon")
    assert "not both" in _same_error(run, "transcribe", "--wav", wav, "--language", "fr", "--decoder-ids", "1 2")
    assert _same_error(run, "tokenize", "--text", "hi", "--language", "fr").startswith("tokenize takes --text")


@pytest.mark.parametrize("both", ["marian", "gpt2", "m2m100", "whisper"], indirect=True)
def test_errors_are_the_same_and_clear(both):
    kind, run, prog = both
    verb = "complete" if kind == "gpt2" else "translate"
    assert _same_error(run, verb) == f'{verb} needs --text "..." or --text-file FILE'
    assert _same_error(run, verb, "--text", "x", "--bogus") == "unknown option --bogus"
    assert _same_error(run, verb, "--text", "x", "--arg", "bogus=1").startswith(
        "--arg bogus: generate has no such option (it takes ")
    assert _same_error(run, "tokenize", "--text", "x", "--arg", "num_beams=2") == "--arg num_beams: tokenize takes no --arg"
    assert _same_error(run, "generate", "--text", "x") == \
        "--text and --text-file go with the verbs tokenize, translate and complete"
    assert _same_error(run, verb, "--text", "a", "--text", "b") == "give one --text or --text-file"
    (code, _, err), (icode, _, ierr) = run(verb, "--text", "x", "--stream")
    assert code == 1 and icode == 1 and f"{verb} takes --text or --text-file, --arg" in err and "--stream" not in err
    for args in (["translat"], ["translat", "--text", "x"]):  # a misspelt verb is no function either
        (code, _, err), (icode, _, ierr) = run(*args)
        assert code == 1 and "no function 'translat' in compiled-run (it has: " in err
        assert icode == 1 and "no function 'translat'" in ierr
    if kind != "gpt2":
        assert _same_error(run, "complete", "--text", "x") == (
            f"complete: {prog} is not a decoder-only program (meta.json's is_encoder_decoder is not false); "
            "use the verb translate")


@pytest.fixture(scope="module")
def selective(programs):
    """The text Marian compiled `--selective` and built once, configured with
    -DTENSORVM_TEXT=ON: the compiled command line and the project's tensorvm-run, both on
    one runtime built from the source tree with only the program's ops. One build serves
    the two tests below (CI builds the runtime from source once per run). It stays in
    build/aot-selective-test (TENSORVM_AOT_SELECTIVE_BUILD_DIR), so a rerun only rebuilds
    what changed."""
    import os
    import shutil

    from tensorvm.pycompiler.cli import main as cli_main

    if not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("needs cmake and ninja")
    _, run, prog = programs("marian")
    root = Path(__file__).resolve().parents[2]
    out = Path(os.environ.get("TENSORVM_AOT_SELECTIVE_BUILD_DIR", root / "build" / "aot-selective-test"))
    # --source: a pip-installed package (CI) runs from no source tree
    assert cli_main(["compile", str(prog), "-o", str(out / "src"), "--name", "compiled", "--selective",
                     "--source", str(root)]) == 0
    assert f'TENSORVM_SOURCE_DIR "{root}"' in (out / "src" / "CMakeLists.txt").read_text()
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    for cmd in (["cmake", "-S", out / "src", "-B", out / "build", "-G", "Ninja", "-DTENSORVM_TEXT=ON", *launcher],
                ["cmake", "--build", out / "build", "--target", "compiled-run", "tensorvm-run"]):
        res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1800)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "warning" not in res.stdout.lower(), res.stdout[-3000:]
    return {"run": run, "program": prog, "src": out / "src", "compiled": out / "build" / "compiled-run",
            "tensorvm-run": out / "build" / "tensorvm" / "tensorvm-run"}


def _listed_ops(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]


def test_selective_compiled_program_links_only_the_ops_it_calls(selective, tmp_path):
    """`tensorvm compile --selective`: the runtime is built from the source tree with only
    the ops the generated code binds (ops.txt). The compiled command line then registers
    exactly those ops, and gives the bits the same project's selective tensorvm-run gives
    (the same kernels) and the tokens of the full runtime."""
    import re

    listed = _listed_ops(selective["src"] / "ops.txt")
    bound = re.findall(r'^  aot::Op \w+\{"(\w+)"\};', (selective["src"] / "compiled.cpp").read_text(), re.M)
    assert listed == sorted(bound) and "linear" in listed and "conv1d" not in listed
    res = subprocess.run([str(selective["compiled"]), "--ops"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and sorted(res.stdout.split()) == listed, res.stderr

    try:
        full = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    for beams in (1, 4):
        saved = {}
        for label, exe in (("compiled", selective["compiled"]), ("selective", selective["tensorvm-run"]),
                           ("full", full)):
            saved[label] = tmp_path / f"{beams}-{label}.npz"
            res = subprocess.run([str(exe), str(selective["program"]), "generate", "--ids", "5 17 9 33 0; 30 8 0",
                                  "--arg", "max_new_tokens=12", "--arg", f"num_beams={beams}", "--outputs",
                                  str(saved[label])], capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, f"{label}: {res.stderr}"
        assert saved["compiled"].read_bytes() == saved["selective"].read_bytes(), f"num_beams={beams}"
        with np.load(saved["compiled"]) as a, np.load(saved["full"]) as b:
            np.testing.assert_array_equal(a["arr_0"], b["arr_0"], err_msg=f"num_beams={beams}")


def test_selective_runtime_with_the_text_library(selective):
    """`tensorvm compile --selective` sizes the runtime for a device, without the text
    library; configured with -DTENSORVM_TEXT=ON it has it, and the compiled command line
    on only the program's ops translates as tensorvm-run does."""
    text = "\n".join(LINES)
    for options in ([], ["--arg", "num_beams=3"]):
        want = selective["run"]("translate", "--text", text, *options)[1]
        got = subprocess.run([str(selective["compiled"]), str(selective["program"]), "translate", "--text", text,
                              *options], capture_output=True, timeout=600)
        assert got.returncode == 0 and want[0] == 0, got.stderr.decode() + want[2]
        assert got.stdout == want[1], options
