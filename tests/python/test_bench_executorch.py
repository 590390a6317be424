"""The ExecuTorch engines of bench/compare.py, when their venv exists (opt-in: CI does not make it).

`python3 -m bench.engines.executorch_venv` makes the venv (bench/.cache); without it the
run test skips. It runs compare.py on the tiny checkpoint with the two ExecuTorch engines
and transformers: float32 must reproduce transformers' tokens exactly, 8da8w reports its
agreement, and every case but batch-1 greedy is listed as skipped.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import checkpoint  # noqa: E402
from bench.engines import DEFAULT_ENGINES, QUICK_DEFAULT_ENGINES, make_engine  # noqa: E402
from bench.engines import executorch_venv  # noqa: E402

ET = ["executorch-float32", "executorch-8da8w"]


def test_quick_run_leaves_executorch_out():
    assert set(ET) <= set(DEFAULT_ENGINES)
    assert not set(ET) & set(QUICK_DEFAULT_ENGINES)
    assert set(QUICK_DEFAULT_ENGINES) == set(DEFAULT_ENGINES) - set(ET)


def test_supports_batch1_greedy_only():
    eng = make_engine("executorch-float32")
    assert eng.supports(1, 1) is None
    assert "batch 1" in eng.supports(2, 1)
    assert "greedy" in eng.supports(1, 4)


def test_compare_executorch(tmp_path):
    venv = executorch_venv.venv_dir(checkpoint.cache_root())
    if not (venv / executorch_venv.READY).exists():
        pytest.skip(f"no executorch venv at {venv}: python3 -m bench.engines.executorch_venv makes it")
    out = tmp_path / "et.json"
    # the default cache, where the venv is: the exports are made once and reused (the stamp
    # names the export version, executorch and torch)
    cmd = [sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--strict", "--reps", "1", "--no-bandwidth",
           "--beams", "1,4", "--engines", "transformers," + ",".join(ET), "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert r.returncode == 0, f"compare.py failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    report = json.loads(out.read_text())
    for name in ET:
        eng = report["engines"][name]
        assert eng["status"] == "ok", f"{name}: {eng.get('error')}"
        keys = {c["key"] for c in eng["cases"]}
        assert keys == {"L8_B1_K1", "L16_B1_K1"}, (name, keys)
        assert set(eng["skipped_cases"]) == {"L8_B1_K4", "L8_B2_K1", "L8_B2_K4", "L16_B1_K4", "L16_B2_K1",
                                             "L16_B2_K4"}
        for c in eng["cases"]:
            assert c["encoder_note"] == "measured" and c["encoder_ms"] > 0 and c["ms_per_token"] > 0
            if eng["precision"] == "float32":
                assert c["parity"] == "exact", (name, c)
            else:
                assert 0 <= c["token_agreement_pct"] <= 100
    assert report["engines"][ET[0]]["info"]["export"]["lowered_vs_wrapper_max_abs_logit_diff"] < 1e-3
    assert f"{ET[0]:<20} skipped 6 case(s)" in r.stdout
