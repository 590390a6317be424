"""The short version of bench/soak.py on tiny-marian (the full figures are in bench/results/):
RSS stays flat over repeated generate calls, Sessions on several threads over one
Program give the single-threaded outputs while other Sessions are created and deleted,
and files changed under a loaded program give errors, not signals."""
import sys
from pathlib import Path

import pytest

from marian_fixtures import imported

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import soak  # noqa: E402

TINY = "tiny-marian"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from tensorvm import _C

    _, prog = imported(TINY, tmp_path_factory.mktemp("programs"))
    return _C, Path(prog.path), _C.Program.load(str(prog.path)), soak.batches(prog.meta, seed=3, count=4)


def test_rss_is_flat_over_repeated_generate(loaded):
    _C, _, program, inputs = loaded
    r = soak.soak(_C, program, inputs, calls=300, max_new=6, slack_mb=8.0)
    assert r["ok"], f"RSS grew {r['growth_after_warmup_mb']} MB after warm-up: {r['samples']}"


def test_sessions_on_threads_match_single_threaded_with_churn(loaded):
    _C, _, program, inputs = loaded
    r = soak.concurrency(_C, program, inputs, threads=3, seconds=3.0, max_new=6, stall=30.0)
    assert r["errors"] == [] and r["churn_errors"] == []
    assert r["deadlock"] is None
    assert r["mismatches"] == 0 and r["churn_mismatches"] == 0
    assert min(r["calls_per_thread"]) > 0 and r["churn_sessions_created_and_deleted"] > 0


# Truncating the mapped weights file in place kills the process with SIGBUS today (issue 11,
# finding 4: the loader maps the file and does not copy or guard it).
SIGBUS = pytest.mark.xfail(reason="issue 11: a weights file truncated under its mapping raises SIGBUS", strict=False)


@pytest.mark.parametrize("case", [pytest.param(c, marks=SIGBUS) if "in place" in c and "weights truncated" in c else c
                                  for c in soak.FILE_CASES])
def test_files_changed_under_a_loaded_program(loaded, tmp_path, case):
    _, program_dir, _, _ = loaded
    r = soak.file_swap(program_dir, tmp_path, max_new=4, cases=[case])["cases"][case]
    assert r["ok"], r["outcome"]
