"""tensorvm.load_bytes: an imported Marian program loaded from memory (text, weights and
meta as bytes) generates what the same program loaded from its directory does, and bad
bytes are errors naming the part in memory. The C++ side is tests/cpp/test_program_memory.cpp."""
import json

import numpy as np
import pytest

import tensorvm

from marian_fixtures import imported

IDS = np.array([[3, 5, 7, 0], [9, 4, 0, 39]], np.int64)  # tiny-marian: 0 is EOS, 39 pad


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _, prog = imported("tiny-marian", tmp_path_factory.mktemp("load_bytes"))
    return prog


def _parts(prog):
    return ((prog.path / "program.py").read_bytes(), (prog.path / "weights.safetensors").read_bytes(),
            (prog.path / "meta.json").read_bytes())


def test_same_tokens_as_from_the_directory(tiny):
    text, weights, meta = _parts(tiny)
    mem = tensorvm.load_bytes(text, weights, meta)
    assert mem.meta == tiny.meta and mem.functions == tiny.functions
    mask = (IDS != 39).astype(np.int64)
    for beams in (1, 3):
        want = tiny.generate(IDS, mask, num_beams=beams, max_new_tokens=12)
        got = mem.generate(IDS, mask, num_beams=beams, max_new_tokens=12)
        np.testing.assert_array_equal(got, want)
    del weights  # the program copied them
    np.testing.assert_array_equal(mem.generate(IDS, mask, max_new_tokens=12),
                                  tiny.generate(IDS, mask, max_new_tokens=12))
    # str text and a dict meta work too; replay needs a directory and says so
    alt = tensorvm.load_bytes(text.decode(), bytearray(_parts(tiny)[1]), json.loads(meta))
    assert alt.meta["format"] == "tensorvm-ir"
    with pytest.raises(NotImplementedError, match="loaded from memory"):
        alt.replay("generate", IDS)


def test_bad_bytes_are_errors(tiny):
    text, weights, meta = _parts(tiny)
    for n in (0, 7, 8, 100, len(weights) // 2, len(weights) - 1):
        with pytest.raises(tensorvm.VMError, match=r"weights.safetensors \(in memory\): .*(truncated|shorter)"):
            tensorvm.load_bytes(text, weights[:n], meta)
    corrupt = bytearray(weights)
    corrupt[8] = ord("[")  # the header is no longer a JSON object
    with pytest.raises(tensorvm.VMError, match=r"weights.safetensors \(in memory\)"):
        tensorvm.load_bytes(text, bytes(corrupt), meta)
    with pytest.raises(tensorvm.VMError, match=r"meta.json \(in memory\): not valid JSON"):
        tensorvm.load_bytes(text, weights, b"{")
    with pytest.raises(tensorvm.VMError, match=r"program.py \(in memory\):"):
        tensorvm.load_bytes(text + b"\ndef broken(:\n", weights, meta)
    with pytest.raises(tensorvm.VMError, match="param"):
        tensorvm.load_bytes(text, None, meta)  # the program reads weights it was not given
    with pytest.raises(TypeError, match="weights must be bytes"):
        tensorvm.load_bytes(text, "not bytes", meta)
