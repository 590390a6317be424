"""`tensorvm compile`: the tiny Marian program compiled to C++ and built against the
runtime under test gives outputs bit-identical to the interpreter's, in one process and
on the same inputs and thread count (tests/aot/compare.cpp: encode, decode_step step by
step, generate greedy, beam and sampling with a seed), counts instructions and shows a
profiler the same ops as the interpreter, and its command line prints, saves and fails
as tensorvm-run does (docs/aot.md)."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from marian_fixtures import imported
from tensorvm import _C
from tensorvm.pycompiler.aot import runtime_cmake_args
from tensorvm.pycompiler.cli import main as cli_main
from tensorvm.pycompiler.locations import NotInstalledError, get_tensorvm_run

ROOT = Path(__file__).resolve().parents[2]


def _compile_and_build(tmp: Path, program: Path) -> dict:
    """`tensorvm compile` of `program`, built with tests/aot/compare.cpp against the runtime under test."""
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    assert cli_main(["compile", str(program), "-o", str(tmp / "compiled"), "--name", "compiled"]) == 0
    try:
        args = runtime_cmake_args(tmp)
    except NotInstalledError as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    if shutil.which("ccache"):
        args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    logs = []
    for cmd in (["cmake", "-S", str(ROOT / "tests" / "aot"), "-B", str(tmp / "build"), f"-DCOMPILED_DIR={tmp / 'compiled'}",
                 *args],
                ["cmake", "--build", str(tmp / "build"), "-j2"]):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
        assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
        logs.append(res.stdout + res.stderr)
    return {"program": program, "compiled": tmp / "compiled", "build": tmp / "build", "log": "\n".join(logs)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("aot")
    _, prog = imported("tiny-marian", tmp)
    return _compile_and_build(tmp, Path(prog.path))


def test_builds_without_warnings(built):
    assert "warning" not in built["log"].lower(), built["log"]


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_is_bit_identical_to_the_interpreter(built, threads):
    res = subprocess.run([str(built["build"] / "compare"), str(built["program"]), "--threads", str(threads),
                          "--ids", "3 4 5 6 7 8 0; 9 0; 11 12 13 0", "--steps", "5"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("encode: identical") and lines[1].startswith("decode_step: 5 steps identical")
    gen = [line for line in lines if line.startswith("generate(")]
    assert len(gen) == 4 and all("identical" in line for line in gen)
    # the same instruction count (max_instructions: the same smallest budget and the same
    # error one below it), and a profiler sees the same ops and calls
    assert any(line.startswith("instructions executed: ") and line.endswith(" in both") for line in lines)
    assert any(line.startswith("max_instructions: both fit in ") for line in lines)
    assert any(line.startswith("profile: ") and "the same counts" in line for line in lines)


def test_prompt_lookup_is_bit_identical_to_the_interpreter(built):
    """Prompt-lookup decoding (batch 1: its candidates, verify passes and cache cuts) in the
    compiled program: the same tokens and instruction count as the interpreter."""
    res = subprocess.run([str(built["build"] / "compare"), str(built["program"]), "--threads", "2",
                          "--ids", "3 4 5 3 4 5 3 4 5 6 0", "--generate", "num_beams=1,prompt_lookup_num_tokens=3",
                          "--generate", "num_beams=1,prompt_lookup_num_tokens=9,max_matching_ngram_size=1,"
                          "max_new_tokens=7"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    gen = [line for line in res.stdout.splitlines() if line.startswith("generate(")]
    assert len(gen) == 2 and all("identical" in line for line in gen), res.stdout


def test_a_missing_weight_fails_at_load_naming_it(built, tmp_path):
    from tensorvm.pycompiler import weights_io

    other = tmp_path / "other.tvm"
    shutil.copytree(built["program"], other)
    weights, meta = weights_io.read(other / "weights.safetensors")
    del weights["model.shared.weight"]
    weights_io.write(other / "weights.safetensors", weights, meta)
    code, _, err = _run_cli(built["build"] / "compiled" / "compiled-run", other, "encode", "--ids", "5 6")
    assert code == 1 and "no weight named 'model.shared.weight'" in err, err


def _run_cli(exe, program, *args):
    res = subprocess.run([str(exe), str(program), *args], capture_output=True, text=True, timeout=600)
    return res.returncode, res.stdout, res.stderr


def test_command_line_matches_tensorvm_run(built, tmp_path):
    try:
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    exe = built["build"] / "compiled" / "compiled-run"
    for options in ([], ["--arg", "num_beams=1"], ["--arg", "do_sample=True", "--arg", "seed=3", "--arg", "top_k=0"]):
        common = ["generate", "--ids", "5 6 7 0; 8 9 0", "--threads", "2", *options]
        a = _run_cli(exe, built["program"], *common, "--outputs", str(tmp_path / "a.npz"))
        b = _run_cli(interp, built["program"], *common, "--outputs", str(tmp_path / "b.npz"))
        assert a[0] == 0 and b[0] == 0, a[2] + b[2]
        assert a[1] == b[1]
        with np.load(tmp_path / "a.npz") as x, np.load(tmp_path / "b.npz") as y:
            assert sorted(x.files) == sorted(y.files)
            for k in x.files:
                assert x[k].dtype == y[k].dtype and x[k].tobytes() == y[k].tobytes()


def _interpreter_error(program, function, named) -> str:
    interp = _C.Session(_C.Program.load(str(program)))
    with pytest.raises(Exception) as e:
        interp.run_named(function, named)
    return str(e.value)


def test_errors_name_the_op_the_ir_line_and_the_call_chain(built):
    exe = built["build"] / "compiled" / "compiled-run"
    code, _, err = _run_cli(exe, built["program"], "nope")
    assert code == 1 and "no function 'nope'" in err
    # an out-of-range token id in encode: the same message and IR line as the interpreter's
    want = _interpreter_error(built["program"], "encode",
                              {"input_ids": np.array([[5, 999]]), "attention_mask": np.ones((1, 2), np.int64)})
    code, _, err = _run_cli(exe, built["program"], "encode", "--ids", "5 999")
    assert code == 1 and err == f"compiled-run: error: {want}\n"
    # inside nested functions: a decoder id out of range fails in decode_step, called by
    # beam_step, the body of a while_loop in beam_search, a branch of a cond in generate;
    # and in encode called from generate. The whole traceback is the interpreter's.
    for ids, decoder_ids, depth in (("5 6 0", [[39, 999]], 5), ("5 999", None, 3)):
        named = {"input_ids": np.array([[int(i) for i in ids.split()]])}
        if decoder_ids:
            named["decoder_input_ids"] = np.array(decoder_ids)
        want = _interpreter_error(built["program"], "generate", named)
        assert len(want.splitlines()) == depth and want.splitlines()[-1].startswith(f"  at {built['program']}/program.py:"), want
        args = ["--decoder-ids", " ".join(str(i) for i in decoder_ids[0])] if decoder_ids else []
        code, _, err = _run_cli(exe, built["program"], "generate", "--ids", ids, *args)
        assert code == 1 and err == f"compiled-run: error: {want}\n"


def test_max_instructions_stops_a_loop_as_the_interpreter(built):
    """--max-instructions: a tiny budget stops generate's loop with the interpreter's
    error (naming the loop's IR line and the calls above it); a large one changes nothing."""
    try:
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    exe = built["build"] / "compiled" / "compiled-run"
    for options in ([], ["--arg", "num_beams=1"]):
        common = ["generate", "--ids", "5 6 7 0; 8 9 0", *options]
        a = _run_cli(exe, built["program"], *common, "--max-instructions", "300")
        b = _run_cli(interp, built["program"], *common, "--max-instructions", "300")
        assert a[0] == 1 and b[0] == 1
        assert "(max_instructions) in loop '" in a[2] and f"\n  at {built['program']}/program.py:" in a[2], a[2]
        assert a[2].replace("compiled-run:", "tensorvm-run:") == b[2]
        a = _run_cli(exe, built["program"], *common, "--max-instructions", "10000000")
        b = _run_cli(interp, built["program"], *common)
        assert a[0] == 0 and b[0] == 0 and a[1] == b[1], a[2]


def test_profile_prints_the_interpreters_tables(built, tmp_path):
    """--profile / --trace on the compiled command line: the profiler's op, call and line
    tables (the same ops and calls as the interpreter: compare.cpp checks their counts)
    and a Chrome trace."""
    import json

    exe = built["build"] / "compiled" / "compiled-run"
    code, out, err = _run_cli(exe, built["program"], "generate", "--ids", "5 6 7 0", "--profile",
                              "--trace", str(tmp_path / "t.json"))
    assert code == 0, err
    assert re.search(r"^op +calls +total ms", out, re.M) and re.search(r"^linear +\d+ ", out, re.M)
    assert re.search(r"^call \(inclusive\) +calls", out, re.M) and re.search(r"^decode_step +\d+ ", out, re.M)
    assert re.search(r"^decoder_layer:\d+ +\d+ .* = linear\(", out, re.M)
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert {"generate", "decode_step", "linear"} <= {e.get("name") for e in events}


def test_generated_code_keeps_the_program_shape(built):
    text = (built["compiled"] / "compiled.cpp").read_text()
    ir_text = (built["program"] / "program.py").read_text()
    ir_functions = re.findall(r"^def (\w+)\(", ir_text, re.M)
    for name in ir_functions:  # one C++ function per IR function, with its signature above it
        assert re.search(rf"^// def {name}\(.*\n\S.* f_{name}\(Ctx& ", text, re.M), name
    # the layers (one call per layer in the IR) are a loop over the layer index; while_loop
    # is a C++ while, cond a C++ conditional
    # (each call names its IR line, for errors: the layer's is the first call's line + layer)
    assert re.search(r"for \(int64_t t_layer = 0; t_layer < 2; \+\+t_layer\)\n +v_encoder_layer_1 = f_encoder_layer\("
                     r"aot::at\(c, \d+ \+ t_layer\), std::move\(v_encoder_layer_1\), \w+, "
                     r"vm::Value::from_int\(t_layer\)\);", text)
    assert text.count("while (aot::loop(c, ") == ir_text.count("= while_loop(")
    assert text.count("aot::test(c, ") == ir_text.count("= cond(")
    # each function opens its frame: its def line and the instructions it counts
    assert text.count("  aot::Frame frame(c, ") == len(ir_functions)
    # every op call is a direct kernel call naming its IR line; no interpreter
    assert "vm::Program" not in text and "vm::run(" not in text
    assert len(re.findall(r"aot::call(?:_n<\d+>)?\(c, \d+, c\.op\.", text)) == \
        sum(1 for line in ir_text.splitlines() if re.match(r"\s+[\w, ]+ = (?!param\(|while_loop\(|cond\(|emit\()[a-z_0-9]+\(", line)
            and re.match(r"\s+[\w, ]+ = ([a-z_0-9]+)\(", line).group(1) not in ir_functions)


@pytest.mark.parametrize("name, ids", [("gpt2-odd", "5 17 9 33; 4 8"), ("m2m100-odd", "5 6 7 2; 8 9 2"),
                                      ("t5-gated-untied", "5 6 7 1; 8 9 1")])
def test_other_architectures_are_bit_identical(tmp_path_factory, name, ids):
    """GPT-2 (decoder-only, left-padded prompts; generate only), M2M100 and T5 (encoder-decoders,
    T5 with its relative position bias: encode and decode_step too): generate beam, greedy,
    sampling and greedy with repetition_penalty (GPT-2: its left padding is unpenalized), 2 threads."""
    from decoder_only_helpers import checkpoint

    from tensorvm.pycompiler.import_hf import import_hf

    tmp = tmp_path_factory.mktemp(f"aot-{name}")
    import_hf(checkpoint(name), tmp / f"{name}.tvm")
    b = _compile_and_build(tmp, tmp / f"{name}.tvm")
    assert "warning" not in b["log"].lower(), b["log"]
    res = subprocess.run([str(b["build"] / "compare"), str(b["program"]), "--ids", ids, "--threads", "2",
                          *[a for g in ("max_new_tokens=6", "max_new_tokens=6,num_beams=1",
                                        "max_new_tokens=6,num_beams=1,do_sample=True,seed=11,top_k=0",
                                        "max_new_tokens=6,num_beams=1,repetition_penalty=0.6")
                            for a in ("--generate", g)]],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    gen = [line for line in res.stdout.splitlines() if line.startswith("generate(")]
    assert len(gen) == 4 and all("identical" in line for line in gen)
    assert ("decode_step: " in res.stdout) == (name != "gpt2-odd")


def test_whisper_transcribe_matches_tensorvm_run(tmp_path_factory):
    """Whisper from audio (log_mel, encode, generate): the compiled command line and
    tensorvm-run print and save the same tokens."""
    import sys
    import wave

    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    import random_checkpoints
    from tensorvm.pycompiler.import_hf import import_hf

    try:
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    tmp = tmp_path_factory.mktemp("aot-whisper")
    import_hf(random_checkpoints.ensure("whisper-odd"), tmp / "whisper.tvm")
    b = _compile_and_build(tmp, tmp / "whisper.tvm")
    samples = (np.random.default_rng(0).standard_normal(16000) * 3000).astype(np.int16)
    with wave.open(str(tmp / "noise.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(samples.tobytes())
    for beams in ("1", "2"):
        common = ["transcribe", "--wav", str(tmp / "noise.wav"), "--arg", "max_new_tokens=6", "--arg", f"num_beams={beams}"]
        a = _run_cli(b["build"] / "compiled" / "compiled-run", b["program"], *common, "--outputs", str(tmp / "a.npz"))
        c = _run_cli(interp, b["program"], *common, "--outputs", str(tmp / "b.npz"))
        assert a[0] == 0 and c[0] == 0, a[2] + c[2]
        assert a[1] == c[1]  # (as text when the program carries a tokenizer: tests/python/test_aot_text.py)
        assert (tmp / "a.npz").read_bytes() == (tmp / "b.npz").read_bytes()


EDGE_IR = '''# tensorvm ir 1
def count_cond(i: int, acc: Tensor, limit: int) -> bool:
    go = lt(i, limit)
    return go

def count_body(i: int, acc: Tensor, limit: int) -> tuple[int, Tensor, int]:
    new = add(i, 1)
    acc_1 = add(acc, 0.5)
    return new, acc_1, limit

def pick(x: Tensor, y: Tensor) -> Tensor:
    return x

def other(x: Tensor, y: Tensor) -> Tensor:
    return y

def shape_of(n: Any) -> Tensor:
    z = zeros([2, n], dtype="f32")
    return z

def outer(n: Any) -> Tensor:
    z = shape_of(n)
    return z

def main(limit: int, flag: bool) -> tuple[int, Tensor, Tensor, bool, Any]:
    i0 = add(0, 0)
    acc0 = zeros([2, 3], dtype="f32")
    int, acc, limit_1 = while_loop(count_cond, count_body, i0, acc0, limit)
    t = while_loop(count_cond, count_body, i0, acc0, -1)
    m = full([2, int], -inf, dtype="f32")
    delete = cond(flag, pick, other, acc, m)
    go = emit("a\\"b?\\n\\t\\xff", delete)
    return int, acc, delete, go, t
'''


def test_names_literals_and_control_flow_of_a_program_without_weights(tmp_path_factory):
    """C++ keywords as value and function names (int, delete, main), a while_loop bound to
    names and one packed into a tuple, cond, a string literal with escapes, -inf, an int
    list with a name in it, and a program with no weights file: the compiled command line
    prints what tensorvm-run prints, and fails as it does (a list item that is not an int,
    in a function called by another)."""
    try:
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        pytest.skip(str(e))
    tmp = tmp_path_factory.mktemp("aot-edge")
    prog = tmp / "edge.tvm"
    prog.mkdir()
    (prog / "program.py").write_text(EDGE_IR)
    (prog / "meta.json").write_text('{"format": "tensorvm-ir", "version": 1}')
    b = _compile_and_build(tmp, prog)
    assert "warning" not in b["log"].lower(), b["log"]
    text = (b["compiled"] / "compiled.cpp").read_text()
    assert "auto& [v_int, v_acc, v_limit_1] = " in text and "vm::Value v_delete = aot::test(c, " in text
    for args in (["--arg", "limit=3", "--arg", "flag=False"], ["--arg", "limit=2", "--arg", "flag=True"]):
        a = _run_cli(b["build"] / "compiled" / "compiled-run", prog, "main", *args)
        c = _run_cli(interp, prog, "main", *args)
        assert a[0] == 0 and c[0] == 0, a[2] + c[2]
        assert a[1] == c[1]
    a = _run_cli(b["build"] / "compiled" / "compiled-run", prog, "outer", "--arg", "n=1.5")
    c = _run_cli(interp, prog, "outer", "--arg", "n=1.5")
    assert a[0] == 1 and c[0] == 1 and "zeros: list items must be ints" in a[2], a[2]
    assert a[2].replace("compiled-run:", "tensorvm-run:") == c[2]


def test_compile_refuses_bad_programs_and_its_own_directory(tmp_path, capsys):
    prog = tmp_path / "bad.tvm"
    prog.mkdir()
    (prog / "program.py").write_text("# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n    y = frobnicate(x)\n    return y\n")
    (prog / "meta.json").write_text('{"format": "tensorvm-ir", "version": 1}')
    assert cli_main(["compile", str(prog), "-o", str(tmp_path / "out")]) == 1
    assert "unknown op or function 'frobnicate'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert cli_main(["compile", str(prog), "-o", str(prog)]) == 1
    assert "another directory" in capsys.readouterr().err


def _listed_ops(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]


def test_compile_options_for_the_runtime(built, tmp_path, capsys):
    """Without --selective the project links the installed runtime (and ops.txt is still
    written, for -DTENSORVM_SOURCE_DIR at configure time); --source and --kernel-variants
    only go with --selective; a bad variant name or source tree is refused."""
    out = tmp_path / "c"
    assert cli_main(["compile", str(built["program"]), "-o", str(out)]) == 0
    assert 'set(TENSORVM_SOURCE_DIR "" CACHE' in (out / "CMakeLists.txt").read_text()
    assert _listed_ops(out / "ops.txt")
    assert cli_main(["compile", str(built["program"]), "-o", str(out), "--kernel-variants", "avx2"]) == 1
    assert "--selective" in capsys.readouterr().err
    assert cli_main(["compile", str(built["program"]), "-o", str(out), "--selective", "--source", str(ROOT),
                     "--kernel-variants", "avx2,neon"]) == 0
    assert 'set(TENSORVM_KERNEL_VARIANTS "avx2;neon" CACHE' in (out / "CMakeLists.txt").read_text()
    assert cli_main(["compile", str(built["program"]), "-o", str(out), "--selective", "--source", str(ROOT),
                     "--kernel-variants", "avx2;x"]) == 1
    assert cli_main(["compile", str(built["program"]), "-o", str(out), "--selective", "--source", str(tmp_path)]) == 1
    assert "not a tensorvm source tree" in capsys.readouterr().err
