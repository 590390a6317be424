"""The memory arena from Python (docs/runtime.md, "A memory arena"): a tiny-marian
generation measured by program.memory / `tensorvm inspect --memory` runs in an arena of
exactly that size with the pool's bits (greedy and beam 4), a smaller arena fails with
the error naming the instruction and the session still runs what fits, and a caller's
buffer of any alignment serves as the arena, held (not resizable) while anything uses it."""
import json

import numpy as np
import pytest

import tensorvm
from tensorvm import _C
from tensorvm.pycompiler.cli import main

from marian_fixtures import imported


def _inputs(prog, beams: int, new_tokens: int) -> dict:
    ids = np.array([[5, 9, 13, 17, 21, 2, 0]], np.int64)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "num_beams": beams,
            "max_new_tokens": new_tokens, "min_new_tokens": new_tokens}


def _positional(prog, named: dict) -> list:
    return [named.get(p.name) for p in prog.module.function("generate").params]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    _, prog = imported("tiny-marian", tmp_path_factory.mktemp("arena"))
    return prog


@pytest.mark.parametrize("beams", [1, 4])
def test_measured_arena_runs_with_the_pools_bits(marian, beams):
    named = _inputs(marian, beams, 6)
    want = marian.session.run_named("generate", named)
    report = marian.memory("generate", *_positional(marian, named))
    assert 0 < report["peak_bytes"] <= report["arena_bytes"]
    assert report["largest_tensor"] <= report["peak_bytes"]
    assert "program.py:" in report["high_water_at"]
    # Every step runs (min_new_tokens): the sequences have all 6 new tokens.
    assert np.asarray(want[0]).shape[-1] == 7
    prog = tensorvm.load(marian.path, arena_bytes=report["arena_bytes"])
    got = prog.session.run_named("generate", named)
    assert _same(got, want)
    stats = prog.session.memory_stats()
    assert stats["capacity"] == report["arena_bytes"]
    assert stats["peak_in_use"] == report["peak_bytes"]
    assert stats["arena_bytes"] == report["arena_bytes"]
    del got
    assert prog.session.memory_stats()["in_use"] == 0
    # The pool's counters are there too (the comparison of bench/arena_bench.py).
    pool = marian.session.memory_stats()
    assert pool["peak_held"] >= pool["peak_live"] > 0


def test_too_small_an_arena_fails_and_the_session_still_runs(marian):
    long, short = _inputs(marian, 4, 12), _inputs(marian, 4, 3)
    need_short = marian.memory("generate", *_positional(marian, short))["arena_bytes"]
    need_long = marian.memory("generate", *_positional(marian, long))["arena_bytes"]
    assert need_long > need_short
    prog = tensorvm.load(marian.path, arena_bytes=need_short)
    with pytest.raises(tensorvm.VMError) as err:
        prog.session.run_named("generate", long)
    msg = str(err.value)
    assert "arena: out of memory: a tensor of" in msg
    assert "program.py:" in msg and " in generate: " in msg
    assert prog.session.memory_stats()["in_use"] == 0
    assert _same(prog.session.run_named("generate", short), marian.session.run_named("generate", short))


@pytest.mark.parametrize("skew", [0, 1, 3])
def test_caller_buffer_of_any_alignment(marian, skew):
    named = _inputs(marian, 1, 4)
    need = marian.memory("generate", *_positional(marian, named))["arena_bytes"]
    backing = np.zeros(need + 128, np.uint8)
    view = backing[skew:]
    session = _C.Session(marian._vm(), arena_buffer=view)
    got = session.run_named("generate", named)
    assert _same(got, marian.session.run_named("generate", named))
    stats = session.memory_stats()
    assert stats["regions"][0]["name"] == "buffer"
    assert need <= stats["capacity"] <= len(view)
    assert backing.any()  # the tensors were written into the caller's memory
    with pytest.raises(tensorvm.VMError, match="arena_bytes or arena_buffer, not both"):
        _C.Session(marian._vm(), arena_bytes=1024, arena_buffer=view)
    with pytest.raises((BufferError, ValueError, TypeError)):
        _C.Session(marian._vm(), arena_buffer=b"read-only bytes" * 100)


def test_caller_buffer_is_held_while_the_session_lives(marian):
    # The buffer export lives as long as the arena: a bytearray cannot be resized under
    # a Session (or a result) carved from it, which was a use-after-free.
    named = _inputs(marian, 1, 4)
    need = marian.memory("generate", *_positional(marian, named))["arena_bytes"]
    buf = bytearray(need + 128)
    session = _C.Session(marian._vm(), arena_buffer=buf)
    for resize in (lambda: buf.extend(b"x" * (1 << 20)), buf.clear, lambda: buf.__delitem__(slice(0, 64))):
        with pytest.raises(BufferError):
            resize()
    got = session.run_named("generate", named)
    assert _same(got, marian.session.run_named("generate", named))
    del session
    with pytest.raises(BufferError):  # the returned tensors were carved from it too
        buf.clear()
    del got
    buf.clear()  # nothing holds it now
    assert len(buf) == 0


def test_inspect_memory_cli(marian, capsys):
    named = _inputs(marian, 4, 5)
    want = marian.memory("generate", *_positional(marian, named))
    argv = ["inspect", "--memory", str(marian.path), "generate", "--ids", "5 9 13 17 21 2 0",
            "--arg", "num_beams=4", "--arg", "max_new_tokens=5", "--arg", "min_new_tokens=5"]
    assert main(argv + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["function"] == "generate"
    assert got["arena_bytes"] == want["arena_bytes"]
    assert got["peak_bytes"] == want["peak_bytes"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "arena needed" in text and "min_new_tokens" in text
    # --shapes: ids of token 1, a mask of ones.
    assert main(["inspect", "--memory", str(marian.path), "--shapes", "input_ids=1x7", "attention_mask=1x7",
                 "--arg", "max_new_tokens=3", "--json"]) == 0
    shaped = json.loads(capsys.readouterr().out)
    assert shaped["inputs"][:2] == ["input_ids int64[1, 7]", "attention_mask int64[1, 7]"]
    assert shaped["arena_bytes"] >= shaped["peak_bytes"] > 0
    assert main(["inspect", "--memory", str(marian.path), "--shapes", "input_ids=1x7:q8"]) == 1
    assert "unknown dtype 'q8'" in capsys.readouterr().err
    assert main(["inspect", "--memory", str(marian.path), "--shapes", "nope=1x7"]) == 1
    assert "generate has no parameter 'nope'" in capsys.readouterr().err
    assert main(["inspect", str(marian.path), "generate"]) == 1
    assert "a FUNCTION goes with --memory" in capsys.readouterr().err
