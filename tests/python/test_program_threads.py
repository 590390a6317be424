"""One tensorvm.Program shared by several Python threads (a web server's workers), as
docs/python.md "Threads" promises: every call gives what the same call gives on one
thread, and a streamer that calls generate on the same Program from inside generate
gets its own result. Program.run checks a Session out of the program's pool for each
call (vm/session_pool.h; its C++ test, tests/cpp/test_session_pool.cpp, runs under TSan).

Before the pool, the threads shared one Session whose run released the GIL with no lock:
wrong-value VMErrors in every run of this test and a segfault in about one of three."""
import threading

import numpy as np
import pytest

import tensorvm
from tensorvm import _C

from marian_fixtures import imported, random_sources
from pyc_helpers import requires_vm

pytestmark = requires_vm

THREADS = 6
ROUNDS = 4
OPTIONS = [dict(num_beams=1, max_new_tokens=8), dict(num_beams=3, max_new_tokens=6),
           dict(num_beams=1, do_sample=True, seed=11, max_new_tokens=8)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _, prog = imported("tiny-marian", tmp_path_factory.mktemp("threads"))
    return prog


def _cases(prog):
    batches = random_sources(np.random.default_rng(5), 4, 5, 40, 9, 2, prog.meta["pad_token_id"],
                             prog.meta["eos_token_id"])
    return [(ids, mask, opts) for ids, mask in batches for opts in OPTIONS]


def test_threads_sharing_one_program_get_the_single_thread_results(tiny):
    cases = _cases(tiny)
    want = [np.asarray(tiny.generate(ids, mask, **opts)) for ids, mask, opts in cases]
    # A fresh Program: the threads also race to load it and make its first Sessions.
    shared = tensorvm.load(tiny.path)
    start = threading.Barrier(THREADS)
    calls, mismatches, errors = [0] * THREADS, [0] * THREADS, []

    def worker(t):
        try:
            start.wait()
            for r in range(ROUNDS):
                for k in range(len(cases)):
                    i = (k + 5 * t + r) % len(cases)  # each thread walks the cases in its own order
                    ids, mask, opts = cases[i]
                    got = np.asarray(shared.generate(ids, mask, **opts))
                    calls[t] += 1
                    if got.shape != want[i].shape or not np.array_equal(got, want[i]):
                        mismatches[t] += 1
        except Exception as e:  # noqa: BLE001  reported below, with the thread
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    made = shared._sessions().sessions_made
    print(f"{THREADS} threads, {sum(calls)} generate calls, {sum(mismatches)} mismatches, {len(errors)} errors, "
          f"{made} sessions made")
    assert errors == []
    assert sum(calls) == THREADS * ROUNDS * len(cases)
    assert sum(mismatches) == 0
    assert 1 <= made <= THREADS


def test_a_streamer_calling_generate_on_the_same_program(tiny):
    (ids, mask, _), (ids2, mask2, _) = _cases(tiny)[0], _cases(tiny)[len(OPTIONS)]
    ids, mask, ids2, mask2 = ids[:1], mask[:1], ids2[:1], mask2[:1]  # streamers take batch one
    want_outer = np.asarray(tiny.generate(ids, mask, max_new_tokens=8))
    want_inner = np.asarray(tiny.generate(ids2, mask2, num_beams=3, max_new_tokens=6))
    prog = tensorvm.load(tiny.path)

    class Nested:
        """Calls generate on the program it is streaming from, at every put."""

        def __init__(self):
            self.inner = []

        def put(self, value):
            self.inner.append(np.asarray(prog.generate(ids2, mask2, num_beams=3, max_new_tokens=6)))

        def end(self):
            pass

    s = Nested()
    np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=8, streamer=s), want_outer)
    assert len(s.inner) >= 2
    for got in s.inner:
        np.testing.assert_array_equal(got, want_inner)
    assert prog._sessions().sessions_made == 2  # the outer run's and the nested runs' (one at a time)


def test_one_session_used_twice_at_once_is_a_clear_error(tiny):
    # A Session itself is not shared: a second run while one is under way is refused,
    # here from a callback of its own run, instead of corrupting its register stack.
    session = _C.Session(tiny._vm())
    ids, mask, _ = _cases(tiny)[0]
    names = [p.name for p in tiny.module.function("generate").params]
    args = [{"input_ids": ids[:1], "attention_mask": mask[:1]}.get(n) for n in names]
    nested = []

    def on_emit(channel, value):
        try:
            session.run("generate", args)
        except tensorvm.VMError as e:
            nested.append(str(e))
        return True

    session.run("generate", args, on_emit)
    assert nested and all("this Session is already running a function" in m for m in nested)
    session.run("generate", args)  # and the session still runs
