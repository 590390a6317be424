"""Streaming and cancellation: the VM-level `emit`, its Python replay, and
generate(..., streamer=s) with transformers' streamers on the tiny Marian checkpoint.

The streamed tokens must equal the returned sequence and arrive while generate is
still running (greedy, sampling, beam search's final prefix); a host's "stop" ends
generation with what was produced so far; the VM and the replay emit the same values."""
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor
from tensorvm import ops as T
from tensorvm.pycompiler.generation.streaming import token_rows
from tensorvm.pycompiler.ir_check import IRCheckError, parse

from marian_fixtures import imported, random_sources
from pyc_helpers import requires_vm, tensorvm_run_tool, write_program

transformers = pytest.importorskip("transformers")
pytestmark = requires_vm

TINY = "tiny-marian"

# A stand-in for a search loop (shared with tests/cpp/test_emit.cpp): each step appends
# last + 1 to every row and emits it.
COUNTER = (Path(__file__).resolve().parents[1] / "fixtures" / "programs" / "emit_counter.py").read_text()


class Recorder:
    """on_emit that records (channel, value) and answers stop after `stop_after` emits."""

    def __init__(self, stop_after=None):
        self.seen, self.stop_after = [], stop_after

    def __call__(self, channel, value):
        self.seen.append((channel, np.asarray(value).tolist()))
        return self.stop_after is None or len(self.seen) < self.stop_after


@pytest.mark.parametrize("stop_after", [None, 1, 3])
def test_emit_vm_and_replay_agree(tmp_path, stop_after):
    prog = tensorvm.load(write_program(tmp_path / "p.tvm", COUNTER))
    prompt = np.array([[10], [20]], np.int64)
    runs = {}
    for engine in ("vm", "replay"):
        rec = Recorder(stop_after)
        out = (prog.run if engine == "vm" else prog.replay)("generate", prompt, 6, on_emit=rec)
        runs[engine] = (np.asarray(out).tolist(), rec.seen)
    assert runs["vm"] == runs["replay"]
    seq, seen = runs["vm"]
    assert seen[0] == ("prompt", [[10], [20]])
    streamed = [v for ch, v in seen[1:]]
    assert [[step[r][0] for step in streamed] for r in range(2)] == [row[1:] for row in seq]
    assert len(seq[0]) == (6 if stop_after is None else stop_after)  # the prompt and the steps before "stop"


def test_emit_without_callback_answers_continue(tmp_path):
    prog = tensorvm.load(write_program(tmp_path / "p.tvm", COUNTER))
    for run in (prog.run, prog.replay):
        assert np.asarray(run("generate", np.array([[0]], np.int64), 4)).tolist() == [[0, 1, 2, 3]]


def test_callback_exception_propagates_unchanged(tmp_path):
    prog = tensorvm.load(write_program(tmp_path / "p.tvm", COUNTER))

    def boom(channel, value):
        raise KeyError("host failed")

    for run in (prog.run, prog.replay):
        with pytest.raises(KeyError, match="host failed"):
            run("generate", np.array([[0]], np.int64), 4, on_emit=boom)
    assert np.asarray(prog.run("generate", np.array([[0]], np.int64), 3)).tolist() == [[0, 1, 2]]


def test_traced_emit_becomes_the_instruction(tmp_path):
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def count(n: int, x: Tensor) -> Tensor:
        def going(i, acc, n, go):
            return T.logical_and(T.lt(i, n), go)

        def body(i, acc, n, go):
            acc = T.add(acc, 1.0)
            return T.add(i, 1), acc, n, tensorvm.emit("acc", acc)

        _, acc, _, _ = tensorvm.while_loop(going, body, 0, x, n, True)
        return acc

    text = str(pb.program())
    assert 'emit("acc", ' in text
    parse(text)
    path = tmp_path / "t.tvm"
    tensorvm.export(pb, path)
    prog = tensorvm.load(path)
    x = np.zeros((2,), np.float32)
    vm, rp = Recorder(stop_after=2), Recorder(stop_after=2)
    a = prog.run("count", 5, x, on_emit=vm)
    b = prog.replay("count", 5, x, on_emit=rp)
    assert vm.seen == rp.seen == [("acc", [1.0, 1.0]), ("acc", [2.0, 2.0])]
    assert np.asarray(a).tolist() == np.asarray(b).tolist() == [2.0, 2.0]
    assert tensorvm.emit("acc", x) is True  # eager: no host listens


@pytest.mark.parametrize("body, message", [
    ('    go = emit(x, x)\n    return go\n', "channel must be a string literal"),
    ('    go = emit("a")\n    return go\n', "emit takes two positional arguments"),
    ('    go = emit("a", value=x)\n    return go\n', "emit takes two positional arguments"),
    ('    emit = neg(x)\n    return emit\n', "builtin"),
])
def test_bad_emit_is_refused_by_both_checkers(tmp_path, body, message):
    text = "# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n" + body
    with pytest.raises(IRCheckError, match=message):
        parse(text)
    with pytest.raises(tensorvm.VMError, match=message):
        tensorvm._C.Program.from_text(text, "")


# ---------------------------------------------------------------- generate with streamers


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _, prog = imported(TINY, tmp_path_factory.mktemp("programs"))
    return prog


def sources(prog, seed, count, batch=1):
    return random_sources(np.random.default_rng(seed), count, 5, 40, 10, batch, prog.meta["pad_token_id"],
                          prog.meta["eos_token_id"])


class IdsTokenizer:
    """What TextStreamer needs of a tokenizer: decode(ids) -> text ("12 7 0 ")."""

    def decode(self, ids, **kwargs):
        return "".join(f"{i} " for i in ids)


class GatedStreamer(transformers.TextIteratorStreamer):
    """Blocks generate at its first token until the consumer has received text, so a
    consumer that gets text while generate has not returned proves the streaming."""

    def __init__(self):
        super().__init__(IdsTokenizer(), skip_prompt=True, timeout=60)
        self.puts, self.consumer_has_text = 0, threading.Event()

    def put(self, value):
        super().put(value)
        self.puts += 1
        if self.puts == 2:
            assert self.consumer_has_text.wait(60)


@pytest.mark.parametrize("options", [dict(num_beams=1), dict(num_beams=1, do_sample=True, seed=7),
                                     dict(num_beams=4)], ids=["greedy", "sampling", "beam4"])
def test_text_iterator_streamer(tiny, options):
    for ids, mask in sources(tiny, 11, 3):
        streamer, result, returned = GatedStreamer(), {}, threading.Event()

        def run():
            result["seq"] = tiny.generate(ids, mask, streamer=streamer, **options)
            returned.set()

        worker = threading.Thread(target=run)
        worker.start()
        texts = []
        for text in streamer:
            if text and not streamer.consumer_has_text.is_set():
                assert not returned.is_set()
                streamer.consumer_has_text.set()
            texts.append(text)
        worker.join(60)
        seq = result["seq"]
        assert [int(t) for t in "".join(texts).split()] == seq[0, 1:].tolist()
        assert np.array_equal(seq, tiny.generate(ids, mask, **options))  # streaming changes nothing


class ListStreamer:
    """transformers' protocol, recording what generate puts; put answers False (stop)
    once `stop_after` token puts were made."""

    def __init__(self, stop_after=None):
        self.puts, self.ended, self.stop_after = [], 0, stop_after

    def put(self, value):
        self.puts.append(np.asarray(value).tolist())
        if self.stop_after is not None and len(self.puts) > self.stop_after:
            return False

    def end(self):
        self.ended += 1

    def tokens(self):
        return [t for p in self.puts[1:] for t in (p if isinstance(p, list) else [p])]


@pytest.mark.parametrize("k", [1, 3])
def test_stop_from_the_streamer_returns_what_was_generated(tiny, k):
    for ids, mask in sources(tiny, 12, 2):
        full = tiny.generate(ids, mask, num_beams=1, max_new_tokens=20, min_new_tokens=8)
        s = ListStreamer(stop_after=k)
        seq = tiny.generate(ids, mask, num_beams=1, max_new_tokens=20, min_new_tokens=8, streamer=s)
        assert seq.shape[1] == 1 + k and s.ended == 1
        assert s.tokens() == seq[0, 1:].tolist() == full[0, 1:1 + k].tolist()


def test_beam_streams_final_tokens_and_ends_with_the_best(tiny):
    early = 0
    for ids, mask in sources(tiny, 13, 8):
        s = ListStreamer()
        seq = tiny.generate(ids, mask, num_beams=4, streamer=s)
        assert s.puts[0] == [[int(seq[0, 0])]]  # the decoder prompt first
        assert s.tokens() == seq[0, 1:].tolist()
        early += len(s.puts) > 2  # some tokens became final before the last step
        # a stop ends beam search as max_length does, and what was streamed is still the returned sequence
        stopped = ListStreamer(stop_after=1)
        short = tiny.generate(ids, mask, num_beams=4, streamer=stopped)
        assert stopped.tokens() == short[0, 1:].tolist()
    assert early > 0


def test_beam_streaming_per_sentence_and_num_return(tiny):
    ids, mask = sources(tiny, 14, 1, batch=3)[0]
    rows = [[] for _ in range(3)]

    def collect(channel, value):
        if channel == "tokens":
            for r, t in zip(rows, token_rows(value)):
                r.extend(t)
        return True

    fn = tiny.module.function("generate")
    for beams, n in ((4, 1), (3, 2)):
        for r in rows:
            r.clear()
        args = {"input_ids": ids, "attention_mask": mask, "num_beams": beams, "num_return_sequences": n}
        seq = tiny.run("generate", *[args.get(p.name) for p in fn.params], on_emit=collect)[0]
        eos = tiny.meta["eos_token_id"]
        for b in range(3):
            best = seq[b * n, 1:].tolist()
            best = best[:best.index(eos) + 1] if eos in best else best
            assert rows[b] == best  # a sentence's stream is its best sequence, through its EOS


def test_replay_streams_the_same(tiny):
    ids, mask = sources(tiny, 15, 1)[0]
    for options in (dict(num_beams=1, max_new_tokens=6), dict(num_beams=3, max_new_tokens=6)):
        vm, rp = ListStreamer(), ListStreamer()
        a = tiny.generate(ids, mask, streamer=vm, **options)
        b = tiny.generate(ids, mask, streamer=rp, engine="replay", **options)
        assert vm.puts == rp.puts and np.array_equal(a, b)


def test_streamers_take_batch_one_as_in_transformers(tiny):
    ids, mask = sources(tiny, 16, 1, batch=2)[0]
    with pytest.raises(ValueError, match="only supports batch size 1"):
        tiny.generate(ids, mask, num_beams=1, streamer=transformers.TextStreamer(IdsTokenizer()))
    with pytest.raises(TypeError, match="put"):
        tiny.generate(ids, mask, streamer=object())


def test_a_program_without_emit_cannot_stream(tmp_path):
    text = "# tensorvm ir 1\ndef generate(input_ids: Tensor) -> Tensor:\n    y = add(input_ids, 0)\n    return y\n"
    prog = tensorvm.load(write_program(tmp_path / "p.tvm", text))
    with pytest.raises(ValueError, match="does not stream"):
        prog.generate(np.array([[1, 2]], np.int64), streamer=ListStreamer())


def test_tensorvm_run_stream_prints_tokens_as_they_come(tiny):
    tool = tensorvm_run_tool()
    ids, _ = sources(tiny, 17, 1)[0]
    row = " ".join(str(t) for t in ids[0] if t != tiny.meta["pad_token_id"])
    out = subprocess.run([tool, str(tiny.path), "generate", "--ids", row, "--arg", "num_beams=1", "--stream"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    streamed = [int(line.split(": ", 1)[1]) for line in out.splitlines() if line.startswith("stream: ")]
    want = tiny.generate(ids[:, :len(row.split())], num_beams=1)[0, 1:].tolist()
    assert streamed == want


@pytest.mark.parametrize("beams", [1, 4])
def test_decoder_prompt_goes_out_first_then_the_new_tokens(tiny, beams):
    start = int(tiny.generate(*sources(tiny, 18, 1)[0], num_beams=1, max_new_tokens=1)[0, 0])
    for i, (ids, mask) in enumerate(sources(tiny, 18, 3)):
        prompt = np.array([[start] + [int(t) for t in np.random.default_rng(i).integers(5, 30, size=3)]], np.int64)
        s = ListStreamer()
        seq = tiny.generate(ids, mask, decoder_input_ids=prompt, num_beams=beams, max_new_tokens=8, streamer=s)
        assert s.puts[0] == prompt.tolist()
        assert s.tokens() == seq[0, prompt.shape[1]:].tolist()


@pytest.mark.parametrize("command", ["run", "replay"])
def test_tensorvm_run_and_replay_stream(tmp_path, capsys, command):
    from tensorvm.pycompiler.cli import main

    write_program(tmp_path / "p.tvm", COUNTER)
    np.savez(tmp_path / "in.npz", prompt=np.array([[5], [7]], np.int64))
    assert main([command, str(tmp_path / "p.tvm"), "generate", "--inputs", str(tmp_path / "in.npz"),
                 "--arg", "limit=4", "--stream"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("stream: ")] == ["stream: 6; 8", "stream: 7; 9", "stream: 8; 10"]
