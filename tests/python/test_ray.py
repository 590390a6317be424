"""tensorvm.ray on a local Ray cluster (2 CPUs): 10,000 short sentences through 2 actors with
the committed trained tiny Marian give, row for row, what one process gives; bad rows get an
error each instead of failing the job; an actor killed in the middle of a batch is restarted,
the batch run again, and every row comes out exactly once."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorvm
from tensorvm import _C

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_fixtures as tf  # noqa: E402

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(not getattr(_C, "has_text", False),
                                reason="tensorvm built without the text library (libsentencepiece-dev, libpcre2-dev)")

GREEDY = {"num_beams": 1}
# Rows the job must survive, each with the start of the error it gets (Arrow columns hold
# str or null, so the non-str kinds are covered by test_bad_rows_without_ray).
BAD = {"cat " * 100: "ValueError: translate: the text gives 101 tokens", None: "TypeError: expected a str"}


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    ckpt = tf.trained_tiny_marian_with_tokenizer(root / "ckpt")
    return Path(tensorvm.import_hf(ckpt, root / "tiny.tvm"))


@pytest.fixture(scope="module")
def cluster():
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    yield
    ray.shutdown()


def _rows(n: int, bad_every: int = 0) -> list[dict]:
    texts = tf.tiny_words_sentences(n, seed=7)
    bad = list(BAD)
    if bad_every:
        for k, i in enumerate(range(bad_every // 2, n, bad_every)):
            texts[i] = bad[k % len(bad)]
    return [{"id": i, "text": t} for i, t in enumerate(texts)]


def _single_process(program_dir: Path, texts: list, batch: int) -> list:
    prog = tensorvm.load(program_dir)
    out = []
    for i in range(0, len(texts), batch):
        out += prog.translate(texts[i:i + batch], **GREEDY)
    return out


def test_ten_thousand_rows_on_two_actors_equal_one_process(cluster, program_dir):
    rows = _rows(10_000, bad_every=997)
    ds = ray.data.from_items(rows, override_num_blocks=8)
    got = tensorvm.ray.translate(ds, program_dir, actors=2, batch_size=128, generate_options=GREEDY).take_all()
    ids = sorted(r["id"] for r in got)
    assert ids == list(range(len(rows))), "a row was lost or duplicated"
    by_id = {r["id"]: r for r in got}
    good = [r for r in rows if r["text"] not in BAD]
    # batches of another size than the actors' (and other neighbours): the result of a row
    # does not depend on its batch
    expected = dict(zip((r["id"] for r in good), _single_process(program_dir, [r["text"] for r in good], 50)))
    n_bad = 0
    for r in rows:
        out = by_id[r["id"]]
        assert out["text"] == r["text"]
        if r["text"] in BAD:
            n_bad += 1
            assert out["translation"] is None and out["error"].startswith(BAD[r["text"]]), out
        else:
            assert out["error"] is None, out
            assert out["translation"] == expected[r["id"]], (r, out)
    assert n_bad == 10


def test_empty_dataset(cluster, program_dir):
    ds = ray.data.from_items([{"id": 0, "text": "cat"}]).filter(lambda r: r["id"] < 0)
    assert tensorvm.ray.translate(ds, program_dir, generate_options=GREEDY).take_all() == []


def test_parquet_of_a_job_whose_blocks_differ(cluster, program_dir, tmp_path):
    """A batch with no error and a batch with nothing but errors give the same column
    types (string), so the job's Parquet files read back as one table."""
    import pyarrow.parquet as pq

    rows = [{"id": i, "text": "cat dog" if i < 20 else None} for i in range(40)]
    ds = ray.data.from_items(rows, override_num_blocks=4)
    tensorvm.ray.translate(ds, program_dir, batch_size=10, generate_options=GREEDY).write_parquet(str(tmp_path / "pq"))
    table = pq.read_table(tmp_path / "pq")
    assert table.num_rows == 40 and str(table.schema.field("translation").type) == "string"
    assert str(table.schema.field("error").type) == "string"
    got = {r["id"]: r for r in table.to_pylist()}
    assert sorted(got) == list(range(40))
    assert {got[i]["translation"] for i in range(20)} == set(tensorvm.load(program_dir).translate(["cat dog"], **GREEDY))
    assert all(got[i]["translation"] is None and got[i]["error"].startswith("TypeError") for i in range(20, 40))


def test_transcribe_a_column_of_clips(cluster, tmp_path):
    """Audio through Ray: clips of different lengths (Ray's variable-shaped tensor column)."""
    wckpt = tf.tiny_whisper_checkpoint(tf.make_whisper_tokenizer(tmp_path / "wtok"), tmp_path / "wckpt", seed=5,
                                       prompt_config=True)
    whisper = tensorvm.import_hf(wckpt, tmp_path / "w.tvm")
    rng = np.random.default_rng(1)
    clips = [(rng.standard_normal(n) * 0.1).astype(np.float32) for n in (8000, 3000, 5000)]
    clips[1][7] = np.inf
    opts = {"language": "fr", "max_new_tokens": 3}
    ds = ray.data.from_items([{"id": i, "audio": c} for i, c in enumerate(clips)])
    got = sorted(tensorvm.ray.transcribe(ds, whisper, generate_options=opts).take_all(), key=lambda r: r["id"])
    assert [r["id"] for r in got] == [0, 1, 2]
    assert got[1]["error"] == "ValueError: the clip has NaN or infinite samples" and got[1]["transcript"] is None
    want = tensorvm.load(whisper).transcribe([clips[0], clips[2]], **opts)
    assert [got[0]["transcript"], got[2]["transcript"]] == want and got[0]["error"] is None


class CrashOnce(tensorvm.ray.ProgramBatches):
    """Kills its process (os._exit, as a crash or the OOM killer would) on the first batch
    holding row CRASH_ID; the marker file makes the retry go through."""

    CRASH_ID = 1234
    MARKER = ""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        Path(self.MARKER + f".start-{os.getpid()}").touch()

    def __call__(self, batch):
        if self.CRASH_ID in batch.column("id").to_pylist() and not os.path.exists(self.MARKER):
            Path(self.MARKER).touch()
            os._exit(1)
        return super().__call__(batch)


def test_actor_killed_mid_job_every_row_once(cluster, program_dir, tmp_path):
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this file
    CrashOnce.MARKER = str(tmp_path / "crashed")
    rows = _rows(3000)
    ds = ray.data.from_items(rows, override_num_blocks=6)
    # one actor running up to 2 batches at once on its threads (one Program, a Session each):
    # the crash takes every batch in flight down, and each is run again
    got = tensorvm.ray.translate(ds, program_dir, actors=1, threads_per_actor=2, batch_size=100,
                                 generate_options=GREEDY, batches_class=CrashOnce).take_all()
    assert os.path.exists(CrashOnce.MARKER), "the injected crash did not happen"
    starts = list(tmp_path.glob("crashed.start-*"))
    assert len(starts) >= 2, f"expected an actor and its restart, saw {len(starts)} processes start"
    assert sorted(r["id"] for r in got) == list(range(len(rows))), "a row was lost or duplicated"
    expected = _single_process(program_dir, [r["text"] for r in rows], 100)
    assert [r["error"] for r in got] == [None] * len(rows)
    assert [r["translation"] for r in sorted(got, key=lambda r: r["id"])] == expected


def test_bad_rows_without_ray(program_dir):
    """The class on its own: every kind of bad cell, an empty batch, a huge row."""
    pb = tensorvm.ray.ProgramBatches(program_dir, generate_options=GREEDY)
    good = tf.tiny_words_sentences(4, seed=3)
    cells = [good[0], None, 7, b"cat", "a\udc80b", "cat " * 100, 3.5, good[1], "", "cat " * 2_000_000, good[2]]
    out = pb({"text": np.array(cells, dtype=object), "id": np.arange(len(cells))})
    assert list(out["id"]) == list(range(len(cells)))
    err = list(out["error"])
    assert err[1] == "TypeError: expected a str, got NoneType"
    assert err[2] == "TypeError: expected a str, got int"
    assert err[3] == "TypeError: expected a str, got bytes"
    assert err[4].startswith("UnicodeEncodeError: the text is not valid UTF-8")
    assert err[5].startswith("ValueError: translate: the text gives 101 tokens")
    assert err[6] == "TypeError: expected a str, got float"
    assert err[9].startswith("ValueError: translate: the text gives 2000001 tokens")
    assert [e is None for e in err] == [True] + [False] * 6 + [True, True, False, True]
    prog = tensorvm.load(program_dir)
    assert [out["translation"][i] for i in (0, 7, 8, 10)] == prog.translate([good[0], good[1], "", good[2]], **GREEDY)
    empty = pb({"text": np.array([], dtype=object)})
    assert len(empty["translation"]) == 0 and len(empty["error"]) == 0
    with pytest.raises(KeyError, match="no column 'text'"):
        pb({"sentence": np.array(["cat"])})


def test_a_batch_generate_refuses_falls_back_to_rows(program_dir, monkeypatch):
    """A batch that generate refuses as a whole is run again row by row, so only the row at
    fault gets the error (here a stand-in generate refuses any batch holding "moon")."""
    pb = tensorvm.ray.ProgramBatches(program_dir, generate_options=GREEDY)
    moon = pb.program.tokenizer.encode("moon")
    real = type(pb.program)._generate_rows

    def refusing(prog, verb, rows, options, left_pad):
        if moon in rows:
            raise RuntimeError("refused")
        return real(prog, verb, rows, options, left_pad)

    monkeypatch.setattr(type(pb.program), "_generate_rows", refusing)
    cells = ["cat dog", "moon", "sun red"]
    out = pb({"text": np.array(cells, dtype=object)})
    assert list(out["error"]) == [None, "RuntimeError: refused", None]
    assert [out["translation"][0], out["translation"][2]] == real(pb.program, "translate", [
        pb.program.tokenizer.encode(c) for c in ("cat dog", "sun red")], dict(GREEDY), False)


def test_complete_and_transcribe_rows(tmp_path):
    """The other verbs: a decoder-only program (left-padded prompts) and a Whisper one
    (a column of clips), each with its bad rows, against the Program's own calls."""
    gpt2 = tensorvm.import_hf(tf.tiny_gpt2_checkpoint(tf.make_byte_bpe_tokenizer(tmp_path / "gtok", "gpt2"),
                                                      tmp_path / "gckpt"), tmp_path / "gpt2.tvm")
    opts = {"max_new_tokens": 4}
    pb = tensorvm.ray.ProgramBatches(gpt2, verb="complete", generate_options=opts)
    cells = ["Once upon", None, "the cat sat on a mat and", "", "x"]
    out = pb({"text": np.array(cells, dtype=object)})
    assert list(out["completion"][[1, 3]]) == [None, None]
    assert out["error"][1].startswith("TypeError")
    assert out["error"][3].startswith("ValueError: complete: the text gives no tokens")
    prog = tensorvm.load(gpt2)
    assert list(out["completion"][[0, 2, 4]]) == prog.complete([cells[0], cells[2], cells[4]], **opts)

    wckpt = tf.tiny_whisper_checkpoint(tf.make_whisper_tokenizer(tmp_path / "wtok"), tmp_path / "wckpt", seed=5,
                                       prompt_config=True)
    whisper = tensorvm.import_hf(wckpt, tmp_path / "w.tvm")
    rng = np.random.default_rng(0)
    clips = [rng.standard_normal(8000).astype(np.float32) * 0.1, "not audio", np.zeros((2, 3), np.float32),
             np.array([0.0, np.nan], np.float32), np.array([], np.float32), rng.standard_normal(4000) * 0.1]
    opts = {"language": "fr", "max_new_tokens": 3}
    pb = tensorvm.ray.ProgramBatches(whisper, verb="transcribe", column="audio", generate_options=opts)
    col = np.empty(len(clips), dtype=object)
    for i, c in enumerate(clips):
        col[i] = c
    out = pb({"audio": col})
    assert [e is None for e in out["error"]] == [True, False, False, False, False, True]
    assert out["error"][3] == "ValueError: the clip has NaN or infinite samples"
    prog = tensorvm.load(whisper)
    assert list(out["transcript"][[0, 5]]) == prog.transcribe([clips[0], clips[5]], **opts)


def test_import_tensorvm_does_not_import_ray():
    import subprocess

    code = "import sys, tensorvm, tensorvm.ray; assert 'ray' not in sys.modules, 'ray imported'; print('ok')"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_several_sequences_per_row(program_dir):
    """num_return_sequences > 1: a list of texts per row, in a numpy batch and in a pyarrow
    one (a list<string> column), None for a bad row."""
    import pyarrow as pa

    opts = {"num_beams": 3, "num_return_sequences": 2}
    pb = tensorvm.ray.ProgramBatches(program_dir, generate_options=opts)
    cells = ["cat dog", None, "sun moon red"]
    want = tensorvm.load(program_dir).translate(["cat dog", "sun moon red"], **opts)
    out = pb({"text": np.array(cells, dtype=object)})
    assert [out["translation"][0], out["translation"][2]] == [want[:2], want[2:]] and out["translation"][1] is None
    table = pb(pa.table({"text": pa.array(cells, type=pa.string())}))
    assert str(table.schema.field("translation").type) == "list<item: string>"
    assert table.column("translation").to_pylist() == [want[:2], None, want[2:]]
    assert table.column("error").to_pylist()[1].startswith("TypeError")
