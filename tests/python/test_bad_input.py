"""Bad input at run time (issue 11, docs/runtime.md "Bad input at run time"): each case
gets a VMError naming the op, the IR line and the function, nothing crashes, and the
next call on the same Session works. Also the Python boundary (byte order, alignment),
the instruction budget, FIFOs and the tools' number parsing."""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from marian_fixtures import imported
from tensorvm import _C
from tensorvm.pycompiler import weights_io

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TENSORVM_BUILD_DIR", ROOT / "build" / "release"))
OK_IDS = np.array([[3, 5, 0]], np.int64)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _, prog = imported("tiny-marian", tmp_path_factory.mktemp("bad_input"))
    return prog


@pytest.fixture(scope="module")
def session(tiny):
    return _C.Session(_C.Program.load(str(tiny.path)))


def _ok(session):
    return session.run_named("generate", {"input_ids": OK_IDS, "num_beams": 1})[0]


# (case, inputs, op, function, message): the table in docs/runtime.md.
BIG = 72057594037927936  # 2**56: once a SIGSEGV in KVCache::append
CASES = [
    ("token id out of range", {"input_ids": np.array([[3, 40, 0]])}, "embedding", "encode",
     r"id 40 out of range \[0, 40\)"),
    ("negative token id", {"input_ids": np.array([[3, -1, 0]])}, "embedding", "encode", r"id -1 out of range"),
    ("empty batch", {"input_ids": np.zeros((0, 3), np.int64)}, "check", "generate", r"no rows \(an empty batch\)"),
    ("zero-length source", {"input_ids": np.zeros((1, 0), np.int64)}, "check", "generate",
     r"no tokens \(a zero-length source\)"),
    ("max_new_tokens 0", {"input_ids": OK_IDS, "max_new_tokens": 0}, "check", "generate",
     r"max_new_tokens must be greater than 0"),
    ("max_new_tokens 2**56", {"input_ids": OK_IDS, "max_new_tokens": BIG, "num_beams": 1}, "check", "generate",
     r"past max_position_embeddings \(64\)"),
    ("max_new_tokens 2**60-1", {"input_ids": OK_IDS, "max_new_tokens": 2**60 - 1, "num_beams": 1}, "check", "generate",
     r"past max_position_embeddings"),
    ("max_new_tokens 2**63-1", {"input_ids": OK_IDS, "max_new_tokens": 2**63 - 1}, "add", "length_from_new_tokens",
     r"integer overflow"),
    ("max_length 2**40", {"input_ids": OK_IDS, "max_length": 2**40}, "check", "generate", r"past max_position_embeddings"),
    ("NaN length_penalty", {"input_ids": OK_IDS, "length_penalty": math.nan, "num_beams": 2}, "check", "generate",
     r"length_penalty must be a number, not NaN"),
    ("NaN temperature", {"input_ids": OK_IDS, "temperature": math.nan, "do_sample": True}, "check", "generate",
     r"temperature must be > 0"),
    ("Inf top_p", {"input_ids": OK_IDS, "top_p": math.inf}, "check", "generate", r"top_p must be in \[0, 1\]"),
    ("NaN repetition_penalty", {"input_ids": OK_IDS, "repetition_penalty": math.nan}, "check", "generate",
     r"repetition_penalty must be > 0"),
    ("float token ids", {"input_ids": OK_IDS.astype(np.float32)}, "embedding", "encode", r"ids must be i64 or i32, got f32"),
    ("1-d input_ids", {"input_ids": OK_IDS[0]}, "size", "generate", r"dim 1 out of range"),
    ("3-d input_ids", {"input_ids": OK_IDS[None]}, "reshape", "source_mask", r"cannot reshape"),
    ("mask of the wrong shape", {"input_ids": OK_IDS, "attention_mask": np.ones((1, 4), np.int64)}, "attention",
     "encoder_layer", r"mask must broadcast"),
    ("source past max_position_embeddings", {"input_ids": np.full((1, 65), 3, np.int64)}, "check", "generate",
     r"source is longer than max_position_embeddings \(64\)"),
    ("max_length past max_position_embeddings", {"input_ids": OK_IDS, "max_length": 65}, "check", "generate",
     r"past max_position_embeddings"),
    ("wrong type for a Tensor input", {"input_ids": 3}, None, None, r"input 'input_ids' must be Tensor, got int"),
]


@pytest.mark.parametrize("case,inputs,op,function,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_an_error_naming_op_line_and_function(session, case, inputs, op, function, message):
    want = _ok(session)
    with pytest.raises(tensorvm.VMError) as info:
        session.run_named("generate", inputs)
    text = str(info.value)
    assert re.search(message, text), text
    if op is not None:
        first, trace = text.split("\n", 1)
        assert first.startswith(f"{op}: "), text
        # "at .../program.py:LINE in FUNCTION: statement" for the failing op, then its callers.
        assert re.search(rf"at \S+program\.py:\d+ in {function}: ", trace), text
        assert re.search(rf"program\.py:\d+ in generate: ", trace), text
    # Nothing is corrupted: the same Session gives the same answer again.
    np.testing.assert_array_equal(_ok(session), want)


def test_init_cache_too_large_is_an_error(session):
    # init_cache(x, 2**40, 2**20) once returned a cache with 0-byte storage.
    states = np.zeros((1, 3, 16), np.float32)
    for rows, max_len in ((2**40, 2**20), (1, BIG), (1, 2**60 - 1)):
        with pytest.raises(tensorvm.VMError, match=r"^kv_cache: .*(more elements than fit in an int64|byte limit)"):
            session.run_named("init_cache", {"encoder_states": states, "rows": rows, "max_len": max_len})
    _ok(session)


def test_supported_edge_cases_run(session):
    # num_beams above the vocabulary size works as in transformers (top-k over beams x vocab).
    out = session.run_named("generate", {"input_ids": OK_IDS, "num_beams": 41})[0]
    assert out.shape[0] == 1 and out.dtype == np.int64
    # i32 ids and a float mask are converted like transformers' inputs.
    want = _ok(session)
    np.testing.assert_array_equal(session.run_named("generate", {"input_ids": OK_IDS.astype(np.int32), "num_beams": 1})[0],
                                  want)
    np.testing.assert_array_equal(session.run_named(
        "generate", {"input_ids": OK_IDS, "attention_mask": np.ones((1, 3), np.float32), "num_beams": 1})[0], want)


def test_generate_wrapper_refuses_before_the_vm(tiny):
    with pytest.raises(ValueError, match="zero-length source"):
        tiny.generate(np.zeros((1, 0), np.int64))
    with pytest.raises(ValueError, match="empty batch"):
        tiny.generate(np.zeros((0, 3), np.int64))
    with pytest.raises(ValueError, match="length_penalty must be a number, not NaN"):
        tiny.generate(OK_IDS, length_penalty=float("nan"), num_beams=2)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        tiny.generate(OK_IDS, max_new_tokens=BIG)
    assert tiny.generate(OK_IDS, num_beams=1).shape[0] == 1


# ---------------------------------------------------------------- the Python boundary

def test_big_endian_and_unaligned_arrays_are_read_by_value():
    prog = _C.Program.from_text("# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n    y = add(x, 0)\n    return y\n")
    s = _C.Session(prog)
    for dt in ("f4", "i8", "i4"):
        x = np.arange(-6, 6).reshape(3, 4).astype(dt)
        for big in (x.astype(">" + dt), x.astype("<" + dt)):
            got = s.run("f", [big])[0]
            np.testing.assert_array_equal(got, x)
            assert got.dtype.isnative
        # Unaligned: a view one byte into a buffer.
        raw = np.zeros(x.nbytes + 1, np.uint8)
        un = np.frombuffer(raw.data, dtype=x.dtype, count=x.size, offset=1).reshape(x.shape)
        assert not un.flags.aligned
        un[...] = x
        np.testing.assert_array_equal(s.run("f", [un])[0], x)
    # Unaligned int64 ids through embedding (once a UBSan report in ops/nn.cpp).
    prog = _C.Program.from_text("# tensorvm ir 1\ndef e(ids: Tensor, w: Tensor) -> Tensor:\n"
                                "    y = embedding(ids, w)\n    return y\n")
    raw = np.zeros(8 * 3 + 1, np.uint8)
    ids = np.frombuffer(raw.data, dtype=np.int64, count=3, offset=1)
    ids[...] = [2, 0, 1]
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(_C.Session(prog).run("e", [ids, w])[0], w[[2, 0, 1]])


# ---------------------------------------------------------------- budget, files, tools

LOOP = """# tensorvm ir 1
def forever(i: int) -> bool:
    t = ge(i, 0)
    return t

def step(i: int) -> int:
    j = add(i, 1)
    return j

def f(x: int) -> int:
    r = while_loop(forever, step, x)
    return r
"""


def test_instruction_budget_stops_an_endless_loop():
    s = _C.Session(_C.Program.from_text(LOOP), max_instructions=50_000)
    with pytest.raises(tensorvm.VMError, match=r"budget of 50000 instructions .* loop 'step'"):
        s.run("f", [0])
    assert s.max_instructions == 50_000
    s.max_instructions = 10
    with pytest.raises(tensorvm.VMError, match="budget of 10 instructions"):
        s.run("f", [0])


def test_program_budget_and_copy_options(tiny):
    prog = tensorvm.load(tiny.path, max_instructions=100, copy_weights=True)
    with pytest.raises(tensorvm.VMError, match="budget of 100 instructions"):
        prog.generate(OK_IDS, num_beams=1)
    assert tensorvm.load(tiny.path, copy_weights=True).generate(OK_IDS, num_beams=1).shape[0] == 1


@pytest.mark.parametrize("name", ["program.py", "meta.json", "weights.safetensors"])
def test_fifo_in_a_program_directory_is_an_error_not_a_hang(tmp_path, tiny, name):
    d = tmp_path / "p.tvm"
    d.mkdir()
    for f in ("program.py", "meta.json", "weights.safetensors"):
        if f != name:
            (d / f).write_bytes((tiny.path / f).read_bytes())
    os.mkfifo(d / name)
    code = ("import tensorvm, sys\n"
            "for f in (lambda: tensorvm.load(sys.argv[1]).session, lambda: tensorvm._C.Program.load(sys.argv[1]),\n"
            "          lambda: tensorvm.pycompiler.weights_io.read_header(sys.argv[1] + '/weights.safetensors')):\n"
            "    try:\n        f()\n    except Exception as e:\n        print('ERR', e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "not a regular file" in r.stdout and name in r.stdout, r.stdout


def _tool():
    tool = BUILD / "tensorvm-run"
    if not tool.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing")
        pytest.skip(f"{tool} is missing; set TENSORVM_BUILD_DIR")
    return tool


def test_tensorvm_run_bad_numbers_and_huge_max_new_tokens(tiny):
    tool = _tool()
    run = lambda *a: subprocess.run([str(tool), str(tiny.path), "generate", "--ids", "3 5 0", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    for big in (str(BIG), "1152921504606846975"):
        r = run("--arg", f"max_new_tokens={big}", "--arg", "num_beams=1")
        assert r.returncode == 1 and "past max_position_embeddings" in r.stderr, r.stderr
    r = run("--threads", "abc")
    assert r.returncode == 1 and "--threads takes a whole number from 1 to 4096, got 'abc'" in r.stderr
    # nan, inf and .5 are floats for an Any parameter (they used to pass as strings).
    r = run("--arg", "length_penalty=nan", "--arg", "num_beams=2")
    assert r.returncode == 1 and "length_penalty must be a number, not NaN" in r.stderr, r.stderr
    r = run("--arg", "top_p=inf")
    assert r.returncode == 1 and "top_p must be in [0, 1]" in r.stderr, r.stderr
    assert run("--arg", "top_p=.5", "--arg", "num_beams=1").returncode == 0
    r = run("--arg", "num_beams=1", "--max-instructions", "50")
    assert r.returncode == 1 and "budget of 50 instructions" in r.stderr, r.stderr


# ---------------------------------------------------------------- the Python safetensors reader

def _raw_safetensors(path, header: bytes, data: bytes = b""):
    path.write_bytes(len(header).to_bytes(8, "little") + header + data)


def test_python_safetensors_reader_refuses_what_the_cpp_reader_refuses(tmp_path):
    p = tmp_path / "w.safetensors"
    bad = {
        "duplicate": (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                      b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', b"\0" * 4, "duplicate key"),
        "overlap": (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, '
                    b'"b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', b"\0" * 8, "overlap"),
        "deep": (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"", "not valid JSON"),
        "extra key": (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}}', b"\0" * 4,
                      "unexpected key"),
        "metadata value": (b'{"__metadata__": {"k": 1}}', b"", "not a string"),
        "negative offset": (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}', b"", "data_offsets"),
    }
    for name, (header, data, msg) in bad.items():
        _raw_safetensors(p, header, data)
        with pytest.raises(weights_io.WeightsError, match=msg):
            weights_io.read_header(p)
        with pytest.raises(tensorvm.VMError):
            _C.Program.from_text("# tensorvm ir 1\ndef f() -> int:\n    return 1\n", str(p))
    _raw_safetensors(p, b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": {"k": "v"}}',
                     b"\0" * 4)
    entries, meta, _ = weights_io.read_header(p)
    assert list(entries) == ["a"] and meta == {"k": "v"}
